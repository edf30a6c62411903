#include "harness/run/packed_cells.h"

#include <boost/iostreams/device/array.hpp>
#include <boost/iostreams/device/back_inserter.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include "datasets/json_text.h"
#include "model/common/error.h"
#include "model/common/input_file.h"

namespace kvbench {

namespace io = boost::iostreams;

namespace {

// Bounds of a packed file: the compressed file, the text it holds, and the
// cells (a leaderboard of two models and two protocols is about 48,000 cells
// of 5 KB each).
constexpr size_t kMaxPackedFileBytes = size_t{1} << 30;
constexpr size_t kMaxPackedTextBytes = size_t{16} << 30;
constexpr size_t kMaxPackedCells = 10'000'000;

}  // namespace

std::vector<nlohmann::json> read_packed_cells(const std::string& path) {
  const std::string packed = read_regular_file(path, kMaxPackedFileBytes, "a packed cells file");
  io::filtering_istream in;
  in.push(io::zstd_decompressor());
  in.push(io::array_source(packed.data(), packed.size()));
  in.exceptions(std::ios_base::badbit);  // a bad frame throws instead of ending the text
  std::vector<nlohmann::json> cells;
  size_t text = 0, line_number = 0, expected = 0;
  std::string line;
  try {
    // A line is read in pieces so no line longer than a cell file may be
    // grows past that bound before it is refused.
    char buf[1 << 16];
    bool more = true;
    while (more) {
      in.read(buf, sizeof buf);
      const std::streamsize got = in.gcount();
      more = got > 0;
      text += static_cast<size_t>(got);
      if (text > kMaxPackedTextBytes)
        throw InputError(path + ": more than 16 GiB of cells once decompressed");
      for (std::streamsize i = 0; i < got; ++i) {
        if (buf[i] != '\n') {
          line += buf[i];
          if (line.size() > kMaxCellBytes)
            throw InputError(path + ": line " + std::to_string(line_number + 1) +
                             ": a cell longer than 64 MiB");
          continue;
        }
        ++line_number;
        const std::string where = path + ": line " + std::to_string(line_number);
        if (line_number == 1) {
          // The header: the format and how many cells follow, so a file cut
          // at a line boundary is not read as a run of fewer cells.
          const nlohmann::json h = parse_json_text(line, where);
          if (!h.is_object() || !h.contains("format") ||
              h["format"] != nlohmann::json("kvbench packed cells 1") || !h.contains("cells") ||
              !h["cells"].is_number_unsigned() || h["cells"].get<uint64_t>() > kMaxPackedCells)
            throw InputError(where +
                             ": expected the header {\"format\": \"kvbench packed "
                             "cells 1\", \"cells\": N} with N <= 10,000,000");
          expected = h["cells"].get<size_t>();
          cells.reserve(expected);
        } else {
          if (cells.size() == expected)
            throw InputError(where + ": more cells than the header's " + std::to_string(expected));
          cells.push_back(parse_json_text(line, where));
        }
        line.clear();
      }
    }
  } catch (const std::ios_base::failure& e) {
    throw InputError(path + ": not zstd-compressed cells (" + e.what() + ")");
  } catch (const io::zstd_error& e) {
    throw InputError(path + ": not zstd-compressed cells (" + e.what() + ")");
  }
  if (!line.empty())
    throw InputError(path + ": line " + std::to_string(line_number + 1) +
                     ": no newline at the end (a truncated file?)");
  if (line_number == 0) throw InputError(path + ": empty (no header line)");
  if (cells.size() != expected)
    throw InputError(path + ": " + std::to_string(cells.size()) + " cells, but its header says " +
                     std::to_string(expected) + " (a truncated file?)");
  return cells;
}

std::string pack_cells(const std::vector<nlohmann::json>& cells) {
  std::string out;
  {
    io::filtering_ostream o;
    o.push(io::zstd_compressor(io::zstd_params(19)));
    o.push(io::back_inserter(out));
    o << nlohmann::json{{"format", "kvbench packed cells 1"}, {"cells", cells.size()}}.dump()
      << '\n';
    for (const auto& c : cells) o << c.dump() << '\n';
  }  // the compressor flushes its frame when the stream closes
  return out;
}

}  // namespace kvbench
