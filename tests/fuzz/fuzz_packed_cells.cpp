// libFuzzer target for packed cells (cells.jsonl.zst, harness/run/packed_cells.h).
// The input is tried twice: as the file's bytes (mostly not zstd: the frame
// checks) and zstd-compressed (the header, line and cell checks behind
// them). Any input must be refused with InputError or read whole; what is
// read packs again into a file that reads back the same.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <boost/iostreams/device/back_inserter.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include "harness/run/packed_cells.h"
#include "model/common/error.h"
#include "tests/fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvbench;
  static const std::string dir = fuzz::scratch_path("fuzz_packed_cells");
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/cells.jsonl.zst";
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::string compressed;
  {
    boost::iostreams::filtering_ostream o;
    o.push(boost::iostreams::zstd_compressor());
    o.push(boost::iostreams::back_inserter(compressed));
    o << input;
  }
  const std::string* tries[] = {&input, &compressed};
  for (const std::string* bytes : tries) {
    fuzz::write_file(file, *bytes);
    try {
      const auto cells = read_packed_cells(file);
      fuzz::write_file(file, pack_cells(cells));
      if (read_packed_cells(file) != cells) std::abort();  // a pack reads back as it was
    } catch (const InputError&) {
    }
  }
  return 0;
}
