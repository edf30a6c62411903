// kvbench submit without a cluster: the job scripts' quoting (hostile paths
// through sh), sbatch's job id, and a fake sbatch on PATH that records its
// arguments; the array script then runs each task as Slurm would and the
// merged shards equal an unsharded run. scripts/slurm_check.sh does the same
// on a real single-node Slurm.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "harness/encode/shell.h"
#include "harness/run/run_folder.h"
#include "harness/run/slurm_job.h"
#include "harness/subprocess.h"
#include "tests/support/reference_llama.h"
#include "tests/support/run_output.h"
#include "tests/support/scratch.h"

namespace kvbench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Every path the scripts hold gets all of these (no '/': each is one
// component): quotes, $, backticks, a newline, a backslash, glob characters.
const std::string kHostile = "a b'c\"d$HOME`id`\ne\\f*[g]";
// The same without the newline, for the output folder (an experiment's
// "output" must not hold control characters).
const std::string kHostileOutput = "a b'c\"d$HOME`id`e\\f*[g]";

std::string scratch(const std::string& name) { return test::scratch_folder("submit", name); }

// Three passkey instances (a shard each) x three policies.
std::string write_experiment(const std::string& dir) {
  const std::string path = dir + "/tiny.json";
  std::ofstream(path) << R"({"name": "tiny", "model": ")" << test::tiny_model_path()
                      << R"(", "threads": 2, "seed": 3,
    "tasks": [{"task": "passkey", "lengths": [300], "depths": [0.2, 0.5, 0.8]}],
    "policies": ["full", {"spec": "window", "budgets": [96]}, "snapkv:budget=96"],
    "decoding": {"chunk": 64, "max_new_tokens": 4}})";
  return path;
}

// A stand-in for sbatch: appends its working directory and arguments
// (NUL-separated, one record per call) to $FAKE_SBATCH_LOG, prints
// $FAKE_SBATCH_REPLY (default 12345) and exits with $FAKE_SBATCH_EXIT.
std::string fake_sbatch_dir(const std::string& dir) {
  const std::string bin = dir + "/fakebin";
  fs::create_directories(bin);
  std::ofstream(bin + "/sbatch") << R"sh(#!/bin/sh
{
  printf 'cwd=%s\0' "$(pwd)"
  for a in "$@"; do printf '%s\0' "$a"; done
  printf '\n'
} >>"$FAKE_SBATCH_LOG"
if [ "${FAKE_SBATCH_EXIT:-0}" != 0 ]; then
  echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2
  exit "$FAKE_SBATCH_EXIT"
fi
printf '%s\n' "${FAKE_SBATCH_REPLY:-12345}"
)sh";
  ::chmod((bin + "/sbatch").c_str(), 0755);
  return bin;
}

// The recorded calls: each a list of (cwd=..., arguments...).
std::vector<std::vector<std::string>> sbatch_calls(const std::string& log) {
  std::vector<std::vector<std::string>> calls;
  const std::string text = test::slurp(log);
  size_t at = 0;
  while (at < text.size()) {
    std::vector<std::string> call;
    while (at < text.size() && text[at] != '\n') {
      const size_t end = text.find('\0', at);
      if (end == std::string::npos) return calls;
      call.push_back(text.substr(at, end - at));
      at = end + 1;
    }
    ++at;
    calls.push_back(call);
  }
  return calls;
}

// kvbench (or any program) with extra environment variables, in `cwd`.
Captured run_in(const std::string& cwd, const std::vector<std::string>& env,
                std::vector<std::string> argv) {
  std::vector<std::string> full = {"/usr/bin/env"};
  full.insert(full.end(), env.begin(), env.end());
  full.insert(full.end(), argv.begin(), argv.end());
  return run_capture(full, cwd);
}

// Cells by id without timing and work (what varies between runs and with
// how a run was split).
std::map<std::string, json> stable_cells(const std::string& dir) {
  return test::stable_cells(dir, /*drop_work=*/true);
}

void expect_one_error_line(const Captured& r, const std::string& contains) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(contains), std::string::npos) << r.err;
}

TEST(Submit, ShellQuoteGivesShBackEveryByte) {
  for (const std::string& s :
       {std::string(), std::string("plain"), kHostile, std::string("'"), std::string("''"),
        std::string("-n"), std::string("a'\\''b"), std::string("\t \x01\x7f\xff")}) {
    const Captured r = run_capture({"sh", "-c", "printf '%s' " + shell_quote(s)});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, s);
  }
}

TEST(Submit, SbatchJobIdIsDigitsAndAnOptionalCluster) {
  EXPECT_EQ(parse_sbatch_job_id("12345\n"), "12345");
  EXPECT_EQ(parse_sbatch_job_id("12345"), "12345");
  EXPECT_EQ(parse_sbatch_job_id("77;cluster-a\n"), "77");
  for (const char* bad : {"", "\n", "Submitted batch job 5\n", "12a\n", "1;\n", "1;a b\n", "1\n2\n",
                          "-1\n", "1;c;d\n", "1234567890123456789\n"})
    EXPECT_EQ(parse_sbatch_job_id(bad), std::nullopt) << bad;
}

TEST(Submit, DryRunPrintsAScriptShParsesAndWritesNothing) {
  const std::string dir = scratch("dry");
  const std::string exp = write_experiment(dir);
  const std::string parent = dir + "/" + kHostileOutput, workdir = dir + "/cwd " + kHostile;
  fs::create_directories(workdir);
  // The name reaches #SBATCH lines (reduced to a safe alphabet) and the
  // run area's path (quoted).
  const Captured r = run_capture({KVBENCH_BINARY, "submit", exp, "--shards", "3", "--merge",
                                  "--dry-run", "--out", parent, "--set", "name=ti'n\"y$x`z`"},
                                 workdir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("#SBATCH --array=1-3\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#SBATCH --cpus-per-task=2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#SBATCH --job-name=ti_n_y_x_z_\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#SBATCH --job-name=ti_n_y_x_z_-merge\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kvbench=" + shell_quote(KVBENCH_BINARY) + "\n"), std::string::npos);
  EXPECT_NE(r.out.find("\ncd " + shell_quote(workdir) + "\n"), std::string::npos) << r.out;
  const std::string area = shell_quote(parent + "/ti'n\"y$x`z`-slurm-");
  EXPECT_NE(r.out.find("area=" + area.substr(0, area.size() - 1)), std::string::npos) << r.out;
  const std::string script = dir + "/printed.sh";
  std::ofstream(script) << r.out;
  const Captured n = run_capture({"sh", "-n", script});
  EXPECT_EQ(n.code, 0) << n.err;
  EXPECT_FALSE(fs::exists(parent));
}

TEST(Submit, BadRequestsGiveOneErrorLineAndLeaveNothing) {
  const std::string dir = scratch("bad");
  const std::string exp = write_experiment(dir);
  const std::string bin = fake_sbatch_dir(dir);
  const std::string out = dir + "/out", log = dir + "/sbatch.log";
  const std::vector<std::string> env = {"PATH=" + bin + ":/usr/bin:/bin", "FAKE_SBATCH_LOG=" + log};
  expect_one_error_line(run_in(dir, env, {KVBENCH_BINARY, "submit", exp, "--shards", "0"}),
                        "--shards 0: must be at least 1");
  expect_one_error_line(run_in(dir, env, {KVBENCH_BINARY, "submit", exp, "--shards", "4"}),
                        "--shards 4: " + exp + " has 3 instances");
  expect_one_error_line(
      run_in(dir, env,
             {KVBENCH_BINARY, "submit", exp, "--shards", "2", "--set", "tasks.0.lenghts=[1]"}),
      "/tasks/0/lenghts: unknown field");
  expect_one_error_line(
      run_in(dir, env,
             {KVBENCH_BINARY, "submit", exp, "--shards", "2", "--out", dir + "/new\nline"}),
      "(with --out): /output: must not contain control characters");
  EXPECT_FALSE(fs::exists(dir + "/new\nline"));
  EXPECT_FALSE(fs::exists(log)) << "sbatch ran for a bad request";
  // A valid request in environment `e`.
  const auto submit_in = [&](const std::vector<std::string>& e) {
    return run_in(dir, e, {KVBENCH_BINARY, "submit", exp, "--shards", "3", "--out", out});
  };
  // env and one more variable.
  const auto with = [&](const std::string& var) {
    std::vector<std::string> e = env;
    e.push_back(var);
    return e;
  };
  // sbatch refuses: its complaint, exit 2, the run area removed.
  expect_one_error_line(
      submit_in(with("FAKE_SBATCH_EXIT=1")),
      "sbatch failed (exit 1): sbatch: error: Batch job submission failed: Invalid partition");
  EXPECT_TRUE(fs::is_empty(out));
  // No sbatch on PATH.
  expect_one_error_line(submit_in({"PATH=" + dir + "/nothing-here"}), "sbatch: not found on PATH");
  EXPECT_TRUE(fs::is_empty(out));
  // A reply that is no job id: the job may be queued, so the area stays.
  expect_one_error_line(submit_in(with("FAKE_SBATCH_REPLY=Submitted batch job 5")),
                        "sbatch printed 'Submitted batch job 5\\n', not a job id");
  EXPECT_FALSE(fs::is_empty(out));
}

// Submits to the fake sbatch from a hostile working directory into a hostile
// output folder with a hostile copy of the kvbench binary; returns the run
// area and kvbench's stdout.
struct Submitted {
  std::string area, out, log;
};
Submitted submit(const std::string& dir, const std::string& exp, bool merge) {
  const std::string bin = fake_sbatch_dir(dir);
  const std::string workdir = dir + "/cwd " + kHostile, parent = dir + "/" + kHostileOutput,
                    kvbench_dir = dir + "/bin " + kHostile;
  fs::create_directories(workdir);
  fs::create_directories(kvbench_dir);
  fs::copy_file(KVBENCH_BINARY, kvbench_dir + "/kvbench");
  Submitted s;
  s.log = dir + "/sbatch.log";
  std::vector<std::string> argv = {kvbench_dir + "/kvbench",
                                   "submit",
                                   exp,
                                   "--shards",
                                   "3",
                                   "--sbatch",
                                   "--time=00:10:00",
                                   "--sbatch=--comment=" + kHostile,
                                   "--out",
                                   parent};
  if (merge) argv.push_back("--merge");
  const Captured r =
      run_in(workdir, {"PATH=" + bin + ":/usr/bin:/bin", "FAKE_SBATCH_LOG=" + s.log}, argv);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  s.out = r.out;
  s.area = test::only_run_folder(parent);
  return s;
}

// Runs the array's tasks as Slurm would: in the run area, one shell per task.
void run_tasks(const std::string& area) {
  for (int task = 1; task <= 3; ++task) {
    const Captured t =
        run_in(area, {"SLURM_ARRAY_TASK_ID=" + std::to_string(task)}, {"sh", area + "/shards.sh"});
    ASSERT_EQ(t.code, 0) << t.err;
  }
}

TEST(Submit, FakeSbatchGetsTheArrayAndItsTasksMergeIntoTheUnshardedRun) {
  const std::string dir = scratch("fake");
  const std::string exp = write_experiment(dir);
  const Submitted s = submit(dir, exp, true);
  EXPECT_EQ(fs::path(s.area).filename().string().rfind("tiny-slurm-", 0), 0u) << s.area;
  EXPECT_NE(s.out.find("submitted job array 12345: 3 shards of tiny\n"), std::string::npos)
      << s.out;
  EXPECT_NE(s.out.find("merge job 12345 writes"), std::string::npos) << s.out;
  EXPECT_EQ(test::slurp(s.area + "/job"), "12345\n");
  const auto calls = sbatch_calls(s.log);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], (std::vector<std::string>{"cwd=" + s.area, "--parsable", "--time=00:10:00",
                                                "--comment=" + kHostile, s.area + "/shards.sh"}));
  EXPECT_EQ(calls[1],
            (std::vector<std::string>{"cwd=" + s.area, "--parsable", "--dependency=afterok:12345",
                                      "--kill-on-invalid-dep=yes", "--time=00:10:00",
                                      "--comment=" + kHostile, s.area + "/merge.sh"}));
  run_tasks(s.area);
  // A task run again (Slurm requeued it) resumes its folder: nothing new.
  const std::string shard2 = test::only_run_folder(s.area + "/shards/2");
  const Captured again = run_in(s.area, {"SLURM_ARRAY_TASK_ID=2"}, {"sh", s.area + "/shards.sh"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("this invocation ran 0"), std::string::npos) << again.out;
  EXPECT_EQ(test::only_run_folder(s.area + "/shards/2"), shard2);

  const Captured m = run_in(s.area, {}, {"sh", s.area + "/merge.sh"});
  ASSERT_EQ(m.code, 0) << m.err;
  const Captured whole = run_capture({KVBENCH_BINARY, "run", exp, "-q", "--out", dir + "/whole"});
  ASSERT_EQ(whole.code, 0) << whole.err;
  const auto merged = stable_cells(s.area + "/merged");
  EXPECT_EQ(merged.size(), 9u);
  EXPECT_EQ(merged, stable_cells(test::only_run_folder(dir + "/whole")));
  // Each shard ran one instance.
  for (int task = 1; task <= 3; ++task)
    EXPECT_EQ(
        stable_cells(test::only_run_folder(s.area + "/shards/" + std::to_string(task))).size(), 3u);
}

TEST(Submit, ThePrintedMergeCommandRunsInShAndMergeWantsEveryShard) {
  const std::string dir = scratch("printed");
  const std::string exp = write_experiment(dir);
  const Submitted s = submit(dir, exp, false);
  EXPECT_EQ(sbatch_calls(s.log).size(), 1u);
  const std::string lead = "merge the shards with:\n  ";
  const size_t at = s.out.find(lead);
  ASSERT_NE(at, std::string::npos) << s.out;
  // The area's newline is shown escaped: the command as sh must see it.
  std::string command = s.out.substr(at + lead.size());
  command = command.substr(0, command.rfind('\n'));
  const std::string escaped_newline = "\\n";
  for (size_t p; (p = command.find(escaped_newline)) != std::string::npos;)
    command.replace(p, escaped_newline.size(), "\n");
  run_tasks(s.area);
  // Without shard 2, merge refuses (a failed task must not pass unnoticed).
  const std::string shard2 = test::only_run_folder(s.area + "/shards/2");
  fs::rename(shard2, dir + "/aside");
  const Captured partial = run_capture({"sh", "-c", command});
  EXPECT_EQ(partial.code, 2);
  EXPECT_NE(partial.err.find("shard 2 of 3 missing"), std::string::npos) << partial.err;
  EXPECT_FALSE(fs::exists(s.area + "/merged"));
  fs::rename(dir + "/aside", shard2);
  const Captured m = run_capture({"sh", "-c", command});
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(stable_cells(s.area + "/merged").size(), 9u);
}

}  // namespace
}  // namespace kvbench
