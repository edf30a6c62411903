// Packed run folders (cells.jsonl.zst, `kvbench pack`): read as cells/ is,
// every bound and check of a cell file kept, and a damaged pack refused with
// one error line naming it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <boost/iostreams/device/back_inserter.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <nlohmann/json.hpp>

#include "harness/run/packed_cells.h"
#include "tests/hostile/hostile_support.h"
#include "tests/support/cli_run.h"
#include "tests/support/reference_llama.h"

namespace kvbench::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::vector<json> cells_of(const std::string& run) {
  std::vector<json> out;
  for (const auto& f : cell_files(run)) out.push_back(json::parse(slurp(f)));
  return out;
}

std::string zstd(const std::string& text) {
  std::string out;
  {
    boost::iostreams::filtering_ostream o;
    o.push(boost::iostreams::zstd_compressor());
    o.push(boost::iostreams::back_inserter(out));
    o << text;
  }
  return out;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(HostilePacked, APackedRunReportsAsItsCellsDidAndCannotResume) {
  const std::string dir = scratch("packed");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  const std::vector<json> cells = cells_of(run);
  ASSERT_EQ(cells.size(), 2u);
  const std::string table = slurp(run + "/table.md");
  const auto packed = run_kvbench("pack " + run);
  ASSERT_EQ(packed.code, 0) << packed.err;
  EXPECT_FALSE(fs::exists(run + "/cells"));
  EXPECT_EQ(read_packed_cells(run + "/cells.jsonl.zst"), cells);
  fs::remove(run + "/table.md");
  const auto report = run_kvbench("report " + run);
  ASSERT_EQ(report.code, 0) << report.err;
  EXPECT_EQ(slurp(run + "/table.md"), table);
  const auto same = run_kvbench("compare " + run + " " + run);
  EXPECT_EQ(same.code, 0) << same.err;
  expect_input_error(run_kvbench("run --resume " + run), "a packed run is finished");
  expect_input_error(run_kvbench("pack " + run), "already packed");
}

TEST(HostilePacked, DamagedPacksAreRefusedNamingTheFile) {
  const std::string dir = scratch("packed-bad");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  const std::vector<json> cells = cells_of(run);
  const std::string file = run + "/cells.jsonl.zst";
  // Both forms at once: which are the cells is unclear.
  write_bytes(file, pack_cells(cells));
  expect_input_error(run_kvbench("report " + run), "holds both cells/ and cells.jsonl.zst");
  fs::remove_all(run + "/cells");
  struct Case {
    std::string bytes, error;
  };
  std::string unsorted = pack_cells({cells[1], cells[0]});
  json bad_id = cells[0];
  bad_id["id"] = "../../escape";
  json no_score = cells[0];
  no_score.erase("score");
  const std::string whole = pack_cells(cells);
  const std::vector<Case> cases = {
      {"not zstd at all", "not zstd-compressed cells"},
      {whole.substr(0, whole.size() / 2), file},
      {unsorted, "line 3: /id: not after the previous line's"},
      {pack_cells({bad_id}), "line 2"},
      {pack_cells({no_score}), "line 2"},
      {zstd("{\"format\": \"kvbench packed cells 1\", \"cells\": 3}\n" + cells[0].dump() + "\n"),
       "1 cells, but its header says 3"},
      {zstd("{\"format\": \"other\", \"cells\": 1}\n"), "line 1: expected the header"},
      {zstd(""), "empty (no header line)"},
  };
  for (const auto& c : cases) {
    write_bytes(file, c.bytes);
    const auto r = run_kvbench("report " + run);
    expect_input_error(r, c.error);
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
  }
  // A link in place of the packed file, even to a good pack, is refused.
  write_bytes(run + "/elsewhere.zst", pack_cells(cells));
  fs::remove(file);
  fs::create_symlink("elsewhere.zst", file);
  expect_input_error(run_kvbench("report " + run), "cells.jsonl.zst: a symbolic link");
  fs::remove(file);
  // A last line without its newline: a truncated file.
  write_bytes(file,
              zstd("{\"format\": \"kvbench packed cells 1\", \"cells\": 1}\n" + cells[0].dump()));
  expect_input_error(run_kvbench("report " + run), "no newline at the end");
}

// A finished shard packs (so a long job's shards can be stored as they
// finish and merged later), and packed shards merge into the same cells as
// the unpacked ones; an unfinished shard, or one whose meta.json says
// something impossible, is refused before anything is written.
TEST(HostilePacked, FinishedShardsPackAndMergeUnfinishedOnesDoNot) {
  const std::string dir = scratch("packed-shard");
  const std::string config = dir + "/four.json";
  std::ofstream(config) << R"({"name": "four", "model": ")" << tiny_model_path() << R"(",
    "threads": 1, "tasks": [{"task": "passkey", "lengths": [128], "depths": [0.25, 0.75],
    "samples": 2}], "policies": ["full", {"spec": "window:budget=64", "label": "win"}],
    "decoding": {"chunk": 64, "max_new_tokens": 2}})";
  std::vector<std::string> shards, packed;
  for (int i = 1; i <= 3; ++i) {
    const std::string out = dir + "/s" + std::to_string(i);
    const auto r =
        run_kvbench("run " + config + " -q --shard " + std::to_string(i) + "/3 --out " + out);
    ASSERT_EQ(r.code, 0) << r.err;
    for (const auto& e : fs::directory_iterator(out)) shards.push_back(e.path().string());
    packed.push_back(dir + "/p" + std::to_string(i));
    fs::copy(shards.back(), packed.back(), fs::copy_options::recursive);
  }
  // Shard 1 of 3 holds instances 0 and 3: 4 cells; shards 2 and 3 one each.
  EXPECT_EQ(cells_of(shards[0]).size(), 4u);
  // Unfinished: a cell gone.
  const std::string cut = dir + "/cut";
  fs::copy(shards[0], cut, fs::copy_options::recursive);
  fs::remove(fs::directory_iterator(cut + "/cells")->path());
  expect_input_error(run_kvbench("pack " + cut), "3 of 4 planned cells");
  // A shard index past its count.
  json meta = json::parse(slurp(cut + "/meta.json"));
  meta["shard"]["index"] = 5;
  std::ofstream(cut + "/meta.json") << meta.dump();
  expect_input_error(run_kvbench("pack " + cut), "/shard/index");
  for (const auto& p : packed) {
    const auto r = run_kvbench("pack " + p);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const auto a = run_kvbench("merge " + shards[0] + " " + shards[1] + " " + shards[2] + " -o " +
                             dir + "/merged");
  ASSERT_EQ(a.code, 0) << a.err;
  const auto b = run_kvbench("merge " + packed[0] + " " + packed[1] + " " + packed[2] + " -o " +
                             dir + "/merged-packed");
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(cells_of(dir + "/merged-packed"), cells_of(dir + "/merged"));
  EXPECT_EQ(slurp(dir + "/merged-packed/table.md"), slurp(dir + "/merged/table.md"));
}

}  // namespace
}  // namespace kvbench::test
