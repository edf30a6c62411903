// Hostile input, round three (issue 35), classes 5, 6, 8, 11 and 13: runs
// and run folders. Labels that name two configurations, a resume over
// changed inputs, cells that are not regular files, numbers and paths that
// the system would truncate, and a report that would replace a table with a
// smaller one. Every refusal: exit 2, one `error:` line naming the file or
// field, nothing written.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/hostile/hostile_support.h"
#include "tests/support/cli_run.h"
#include "tests/support/reference_llama.h"

namespace kvbench::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// `run` of the tiny experiment with its policies replaced by `policies`
// (JSON text), into <dir>/out.
test::CliResult run_with_policies(const std::string& dir, const std::string& policies) {
  return run_kvbench("run " + tiny_experiment(dir) + " -q --out " + dir +
                     "/out --set 'policies=" + policies + "'");
}

// --- class 5: a label names one configuration --------------------------------

TEST(HostileRuns, DuplicateLabelsAreRefusedBeforeAnything) {
  const std::string dir = scratch("labels");
  struct Case {
    std::string policies, error;
  };
  const std::vector<Case> cases = {
      // The campaign's reproducer: two policies labelled "full".
      {R"(["full", {"spec": "window:budget=64", "label": "full"}])",
       "/policies/1/label: the label 'full' is also the label of /policies/0"},
      // A label equal to the full cache kvbench adds.
      {R"([{"spec": "window:budget=64", "label": "full"}])",
       "/policies/0/label: the label 'full' is also the full cache kvbench adds"},
      // A label equal to a generated one (a spec as its own label).
      {R"(["window:budget=64", {"spec": "window:budget=32", "label": "window:budget=64"}])",
       "/policies/1/label: the label 'window:budget=64' is also the label of /policies/0"},
      // ... or to a budget grid's generated "(budget N)".
      {R"j([{"spec": "window", "label": "w", "budgets": [32, 64]},
          {"spec": "snapkv:budget=64", "label": "w (budget 64)"}])j",
       "/policies/1/label: the label 'w (budget 64)' is also the label of /policies/0"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.policies);
    expect_input_error(run_with_policies(dir, c.policies), c.error);
    EXPECT_FALSE(fs::exists(dir + "/out"));
  }
}

// A shared folder whose cells give one label to two configurations: every
// reader refuses it, naming the cell and the field.
TEST(HostileRuns, FoldersWhoseCellsShareALabelAreRefused) {
  const std::string dir = scratch("folder-labels");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  const auto files = cell_files(run);
  ASSERT_EQ(files.size(), 2u);
  std::string window_cell;
  for (const auto& f : files) {
    json c = json::parse(slurp(f));
    if (c["policy"]["label"] != "win") continue;
    c["policy"]["label"] = "full";
    std::ofstream(f) << c.dump();
    window_cell = f;
  }
  const auto before = tree(dir);
  expect_input_error(run_kvbench("report " + run), window_cell + ": /policy/label: 'full'");
  expect_input_error(run_kvbench("compare " + run + " " + run), "/policy/label: 'full'");
  expect_input_error(run_kvbench("merge " + run + " -o " + dir + "/merged"),
                     "/policy/label: 'full'");
  expect_input_error(run_kvbench("history add " + run + " --db " + dir + "/h.sqlite"),
                     "/policy/label: 'full'");
  EXPECT_TRUE(test::same_tree(before, tree(dir)));
  // The other spelling: one configuration (its index) under two labels.
  json c = json::parse(slurp(window_cell));
  c["policy"]["label"] = "win";
  c["policy"]["index"] = 0;
  std::ofstream(window_cell) << c.dump();
  expect_input_error(run_kvbench("report " + run), "configuration 0 is labelled");
}

// --- class 6: --resume checks every input -------------------------------------

TEST(HostileRuns, ResumeRefusesChangedInstanceFilesAndConfig) {
  const std::string dir = scratch("resume-inputs");
  const std::string jsonl = dir + "/passkey.jsonl";
  ASSERT_EQ(run_kvbench("dataset generate --model " + test::tiny_model_path() +
                        " --task passkey --lengths 128 --samples 2 -o " + jsonl)
                .code,
            0);
  const std::string exp = dir + "/exp.json";
  std::ofstream(exp) << R"({"name": "jsonl", "model": ")" << test::tiny_model_path()
                     << R"(", "threads": 1, "tasks": [{"jsonl": ")" << jsonl << R"("}],
      "policies": ["full", "window:budget=64"], "decoding": {"chunk": 64, "max_new_tokens": 2}})";
  ASSERT_EQ(run_kvbench("run " + exp + " -q --out " + dir + "/out").code, 0);
  std::string run;
  for (const auto& e : fs::directory_iterator(dir + "/out")) run = e.path().string();
  // "Interrupted": a cell missing, as after a kill -9.
  const auto files = cell_files(run);
  ASSERT_EQ(files.size(), 4u);
  fs::remove(files.back());

  // An instance changed between kill and resume (its answer).
  const std::string original = slurp(jsonl);
  std::string changed = original;
  const auto at = changed.find("\"answers\":[\"");
  ASSERT_NE(at, std::string::npos) << changed.substr(0, 400);
  changed[at + 12] = changed[at + 12] == '1' ? '2' : '1';
  std::ofstream(jsonl) << changed;
  const auto before = tree(run);
  expect_input_error(run_kvbench("run --resume " + run + " -q"),
                     jsonl + ": changed since this run started");
  EXPECT_TRUE(test::same_tree(before, tree(run)));
  std::ofstream(jsonl) << original;

  // The run folder's own config edited.
  json config = json::parse(slurp(run + "/config.json"));
  config["decoding"]["max_new_tokens"] = 3;
  std::ofstream(run + "/config.json") << config.dump(2) << "\n";
  expect_input_error(run_kvbench("run --resume " + run + " -q"),
                     run + "/config.json: changed since this run started");
  config["decoding"]["max_new_tokens"] = 2;
  std::ofstream(run + "/config.json") << config.dump(2) << "\n";

  // Restored byte for byte: the resume runs the missing cell.
  const auto ok = run_kvbench("run --resume " + run + " -q");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(cell_files(run).size(), 4u);
}

// --- class 8: a cell that is not a regular file -------------------------------

TEST(HostileRuns, CellsThatAreNotRegularFilesAreErrors) {
  const std::string dir = scratch("odd-cells");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  const std::string outside = dir + "/outside.json";
  fs::copy_file(cell_files(run).front(), outside);
  struct Odd {
    std::string name, kind;
    std::function<void(const std::string&)> make;
  };
  const std::vector<Odd> odd = {
      {"fifo.json", "a FIFO",
       [](const std::string& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0644), 0); }},
      {"link.json", "a symbolic link",
       [&](const std::string& p) { fs::create_symlink(outside, p); }},
      {"dir.json", "a directory", [](const std::string& p) { fs::create_directory(p); }},
      {"dangling", "a symbolic link",
       [](const std::string& p) { fs::create_symlink("/nonexistent", p); }},
  };
  for (const auto& o : odd) {
    SCOPED_TRACE(o.name);
    const std::string p = run + "/cells/" + o.name;
    o.make(p);
    const auto before = tree(dir);
    const std::string error = p + ": not a regular file (" + o.kind + ")";
    expect_input_error(run_kvbench("report " + run), error);
    expect_input_error(run_kvbench("merge " + run + " -o " + dir + "/merged"), error);
    expect_input_error(run_kvbench("compare " + run + " " + run), error);
    expect_input_error(run_kvbench("run --resume " + run + " -q"), error);
    EXPECT_TRUE(test::same_tree(before, tree(dir)));
    fs::remove(p);
  }
}

// --- class 11: values the system would truncate --------------------------------

TEST(HostileRuns, NulInPathsAndOutOfRangeNumbersAreRefused) {
  const std::string dir = scratch("truncated");
  const std::string model = test::tiny_model_path();
  // A NUL in the model path, the instance file or the output (from a config
  // or --set): the system would open another file.
  std::ofstream(dir + "/nul.json")
      << R"({"name": "n", "model": ")" << model << R"(\u0000x", "tasks": [{"task": "passkey",
        "lengths": [128]}], "policies": ["full"]})";
  expect_input_error(run_kvbench("run " + dir + "/nul.json"),
                     "/model: must not contain control characters");
  std::ofstream(dir + "/nul-jsonl.json")
      << R"({"name": "n", "model": ")" << model << R"(", "tasks": [{"jsonl": "a.jsonl\u0000x"}],
        "policies": ["full"]})";
  expect_input_error(run_kvbench("run " + dir + "/nul-jsonl.json"),
                     "/tasks/0/jsonl: must not contain control characters");
  expect_input_error(run_kvbench("run " + tiny_experiment(dir) + " --set 'output=\"o\\u0000x\"'"),
                     "/output: must not contain control characters");
  // --shard: whole numbers in range, nothing after.
  for (const std::string s : {"1/4294967297", "4294967297/1", "1/2x", "-1/2", "1/-2", "1/0", "2/1",
                              " 1/2", "1/1000001", "1", "1/", "/2", "1/2/3"}) {
    SCOPED_TRACE(s);
    expect_input_error(run_kvbench("run " + tiny_experiment(dir) + " --shard '" + s + "'"),
                       "--shard");
  }
  EXPECT_FALSE(fs::exists(dir + "/results"));
  // JSONL integers: in their type's range and the config's, never wrapped.
  const std::string jsonl = dir + "/i.jsonl";
  ASSERT_EQ(
      run_kvbench("dataset generate --model " + model + " --task passkey --lengths 128 -o " + jsonl)
          .code,
      0);
  const json good = json::parse(slurp(jsonl));
  struct Bad {
    std::string field;
    json value;
    std::string error;
  };
  const std::vector<Bad> bad = {
      {"max_new_tokens", 4294967297LL, "field 'max_new_tokens' is out of range"},
      {"max_new_tokens", 5000, "field 'max_new_tokens' must be in [0, 4096]"},
      {"max_new_tokens", -1, "field 'max_new_tokens' must be in [0, 4096]"},
      {"sample", 10000000000LL, "field 'sample' is out of range"},
      {"sample", 1e10, "field 'sample' has the wrong type"},
      {"sample", -3, "field 'sample' must be >= 0"},
      {"seed", -1, "field 'seed' is out of range"},
      {"generator_version", 4294967297LL, "field 'generator_version' is out of range"},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.field + " = " + b.value.dump());
    json inst = good;
    inst[b.field] = b.value;
    std::ofstream(jsonl) << inst.dump() << "\n";
    expect_input_error(run_kvbench("dataset show " + jsonl), b.error);
  }
  expect_input_error(run_kvbench("dataset generate --model " + model +
                                 " --task passkey --lengths 9999999999999999k -o " + jsonl),
                     "--lengths");
}

// --- class 13: report never shrinks a table --------------------------------------

TEST(HostileRuns, ReportNeverReplacesATableWithFewerCells) {
  const std::string dir = scratch("shrink");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  // A committed results folder: its tables, no cells/.
  fs::remove_all(run + "/cells");
  const auto before = tree(dir);
  expect_input_error(run_kvbench("report " + run),
                     run + "/table.csv: made from 2 cells, but the folder holds 0 (no cells/");
  EXPECT_TRUE(test::same_tree(before, tree(dir)));
  // Fewer cells than the table: the same.
  const std::string run2 = tiny_run(scratch("shrink2"));
  fs::remove(cell_files(run2).back());
  expect_input_error(run_kvbench("report " + run2), "made from 2 cells, but the folder holds 1");
  // Asked for (the table removed): rendered from what there is.
  fs::remove(run2 + "/table.csv");
  EXPECT_EQ(run_kvbench("report " + run2).code, 0);
}

}  // namespace
}  // namespace kvbench::test
