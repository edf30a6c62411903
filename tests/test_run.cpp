// `kvbench run` end to end on the tiny model: determinism, work sharing that
// changes no number, kill -9 and resume, shards merged = unsharded, bad
// configs leave nothing behind, and the compare gate's exit codes.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness/run/run_folder.h"
#include "kvbench_build_info.h"  // generated at build time
#include "policies/policy_spec.h"
#include "tests/support/reference_llama.h"
#include "tests/support/registry_specs.h"
#include "tests/support/run_output.h"
#include "tests/support/scratch.h"

namespace kvbench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string scratch_dir(const std::string& name) { return test::scratch_folder("run", name); }

// A small grid: 2 passkey instances x (full, a streaming window, snapkv
// after prefill, h2o collecting attention, int8 storage).
std::string write_experiment(const std::string& dir, const std::string& extra = "") {
  const std::string path = dir + "/tiny.json";
  // Returned with the verb: run_cli(write_experiment(dir) + " -q ...").
  std::ofstream(path) << R"({
    "name": "tiny", "model": ")"
                      << test::tiny_model_path() << R"(", "threads": 2, "seed": 3,
    "tasks": [{"task": "passkey", "lengths": [300], "depths": [0.25, 0.75]}],
    "policies": ["full", {"spec": "window", "budgets": [96]}, "snapkv:budget=96", "h2o:budget=96", "int8"],
    "decoding": {"chunk": 64, "max_new_tokens": 4})"
                      << extra << "}";
  return "run " + path;
}

int run_cli(const std::string& args, std::string* out = nullptr) {
  const std::string cmd = std::string(KVBENCH_BINARY) + " " + args + " 2>" + testing::TempDir() +
                          "run-stderr-" + std::to_string(::getpid()) + ".txt";
  FILE* p = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  const int status = pclose(p);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string stderr_text() {
  std::ifstream in(testing::TempDir() + "run-stderr-" + std::to_string(::getpid()) + ".txt");
  return {std::istreambuf_iterator<char>(in), {}};
}

// Runs an experiment on the tiny model (`body`: its tasks, policies and
// decoding fields) with and without shared prefills, expects equal cells
// (work counts aside) and returns them.
std::map<std::string, json> run_shared_and_unshared(const std::string& name,
                                                    const std::string& body) {
  const std::string dir = scratch_dir(name);
  const std::string path = dir + "/" + name + ".json";
  std::ofstream(path) << R"({"name": ")" << name << R"(", "model": ")" << test::tiny_model_path()
                      << R"(", "threads": 2, "seed": 3,)" << body << "}";
  EXPECT_EQ(run_cli("run " + path + " -q --out " + dir + "/a"), 0) << stderr_text();
  EXPECT_EQ(run_cli("run " + path + " -q --no-share --out " + dir + "/b"), 0) << stderr_text();
  const auto shared = test::stable_cells(test::only_run_folder(dir + "/a"), true);
  EXPECT_EQ(shared, test::stable_cells(test::only_run_folder(dir + "/b"), true));
  return shared;
}

// decoding.attention = "int8q": the run records it in its config and shares
// prefills with the same numbers as prefilling alone, the quantized caches
// included. (Its decode steps' scores move by the query's rounding:
// test_attention_q8.cpp; the tiny model's answers need not.)
TEST(Run, Int8QueryAttentionRunsRecordItAndShareExactly) {
  const std::string body = R"(
    "tasks": [{"task": "niah", "lengths": [160], "samples": 2}],
    "policies": ["full", "full+int4", "window:budget=64+int8"],
    "decoding": {"chunk": 64, "attention": "int8q"})";
  const auto cells = run_shared_and_unshared("int8q", body);
  EXPECT_EQ(cells.size(), 6u);
  const std::string dir =
      testing::TempDir() + "kvbench-run-" + std::to_string(::getpid()) + "/int8q/a";
  const json config = read_json_file(test::only_run_folder(dir) + "/config.json");
  EXPECT_EQ(config["decoding"]["attention"], "int8q");
}

// decoding.attention = "bf16": the run records it in its config, shares
// prefills with the same numbers as prefilling alone, and its numbers are
// its own (the teacher-forced NLL moves by bfloat16's rounding).
TEST(Run, Bf16AttentionRunsRecordItAndShareExactly) {
  const std::string body = R"(
    "tasks": [{"task": "niah", "lengths": [160], "samples": 2}],
    "policies": ["full", "snapkv:budget=64", "window:budget=64"],
    "decoding": {"chunk": 64)";
  const auto bf16 = run_shared_and_unshared("bf16", body + R"(, "attention": "bf16"})");
  const auto f32 = run_shared_and_unshared("f32", body + "}");
  ASSERT_EQ(bf16.size(), 6u);
  ASSERT_EQ(f32.size(), bf16.size());
  int moved = 0;
  for (const auto& [id, c] : bf16) {
    ASSERT_TRUE(f32.count(id)) << id;
    const double a = c["retention"]["answer_nll"].get<double>();
    const double b = f32.at(id)["retention"]["answer_nll"].get<double>();
    moved += a != b;
    EXPECT_NEAR(a, b, 0.05 * std::fabs(b) + 1e-3) << id;
  }
  EXPECT_GT(moved, 0);
  const std::string dir =
      testing::TempDir() + "kvbench-run-" + std::to_string(::getpid()) + "/bf16/a";
  const json config = read_json_file(test::only_run_folder(dir) + "/config.json");
  EXPECT_EQ(config["decoding"]["attention"], "bf16");
}

TEST(Run, TwoRunsGiveIdenticalMetricsAndSharingChangesNothing) {
  const std::string dir = scratch_dir("determinism");
  const std::string exp = write_experiment(dir);
  ASSERT_EQ(run_cli(exp + " -q --out " + dir + "/a"), 0) << stderr_text();
  ASSERT_EQ(run_cli(exp + " -q --out " + dir + "/b"), 0) << stderr_text();
  ASSERT_EQ(run_cli(exp + " -q --no-share --out " + dir + "/c"), 0) << stderr_text();
  const auto a = test::stable_cells(test::only_run_folder(dir + "/a"));
  ASSERT_EQ(a.size(), 10u);
  EXPECT_EQ(a, test::stable_cells(test::only_run_folder(dir + "/b")));
  // Without sharing every cell prefills itself; every number is the same.
  EXPECT_EQ(test::stable_cells(test::only_run_folder(dir + "/a"), true),
            test::stable_cells(test::only_run_folder(dir + "/c"), true));
  // Sharing did share: the snapkv cells branched from the full prefill.
  for (const auto& [id, c] : a)
    if (c["policy"]["spec"].get<std::string>().rfind("snapkv", 0) == 0)
      EXPECT_EQ(c["work"]["start"], "branch");
  const json meta = read_json_file(test::only_run_folder(dir + "/a") + "/meta.json");
  // The commit the binary was built from (not the checkout's HEAD at run
  // time), and git_dirty when tracked files differed from it then.
  EXPECT_EQ(meta["git_commit"], KVBENCH_GIT_COMMIT);
  EXPECT_EQ(meta.value("git_dirty", false), KVBENCH_GIT_DIRTY != 0);
  EXPECT_LT(meta["work"]["prefill_tokens_computed"].get<int64_t>(),
            meta["work"]["prefill_tokens_naive"].get<int64_t>());
  for (const char* f : {"table.md", "table.csv", "metrics.json", "predictions.jsonl", "report.md",
                        "report.html", "config.json"})
    EXPECT_TRUE(fs::exists(test::only_run_folder(dir + "/a") + "/" + f)) << f;
}

TEST(Run, StreamingLLMsContiguousPositionsRunAndSharingChangesNothing) {
  // pos=contiguous (StreamingLLM's own setting) renumbers the cache after
  // every eviction: each step runs at the cache's next position. Offload
  // and quest rows ride along (restore during prefill, paged decoding).
  const auto a = run_shared_and_unshared("contiguous", R"(
    "tasks": [{"task": "passkey", "lengths": [300], "depths": [0.5]}],
    "policies": ["full", "streaming:budget=64,pos=contiguous", "streaming:budget=64",
                 "window:budget=64+offload:restore=32", "quest:budget=32,dense=0"],
    "decoding": {"chunk": 64, "max_new_tokens": 4})");
  ASSERT_EQ(a.size(), 5u);
  for (const auto& [id, c] : a) {
    const std::string spec = c["policy"]["spec"].get<std::string>();
    const auto& m = c["memory"];
    // Held = hot + cold; attended needle tokens are a subset of held ones.
    if (!c["retention"]["needle_attended"].is_null())
      EXPECT_LE(c["retention"]["needle_attended"].get<double>(),
                c["retention"]["needle_survival"].get<double>())
          << id;
    if (spec.rfind("streaming", 0) == 0) EXPECT_EQ(m["entries_cold"], 0) << id;
    if (spec.rfind("quest", 0) == 0 || spec.find("offload") != std::string::npos) {
      EXPECT_GT(m["entries_cold"].get<int64_t>(), 0) << id;
      EXPECT_EQ(c["retention"]["needle_survival"], 1.0) << id;  // nothing is lost
    }
    EXPECT_GE(m["kv_bytes_peak_prefill"].get<int64_t>(), m["kv_bytes_hot"].get<int64_t>()) << id;
  }
}

// Query-agnostic (kvpress's protocol): every policy the registry builds
// compresses the context alone, then takes the question whole. The shared
// path (the context's full prefill, each policy started from it as
// tests/test_policy_start.cpp proves for any prompt, then the question
// appended by the same code on both paths) equals prefilling each cell alone.
TEST(Run, QueryAgnosticCompressesTheContextAloneAndSharingChangesNothing) {
  std::string policies = R"(["snapkv:budget=0.5")";
  // Each configuration once (the default allocator's and storage's rows are
  // the scorer's own).
  std::set<std::string> specs;
  for (const std::string& spec : test::registry_specs(48))
    if (specs.insert(to_string(parse_policy_spec(spec))).second) policies += ", \"" + spec + "\"";
  policies += "]";
  const auto a = run_shared_and_unshared("agnostic", R"(
    "tasks": [{"task": "niah", "lengths": [300], "depths": [0.5]}],
    "policies": )" + policies + R"(,
    "decoding": {"chunk": 64, "max_new_tokens": 4, "protocol": "query_agnostic"})");
  ASSERT_EQ(a.size(), specs.size() + 1);
  // KV heads over all layers: the full cache holds every prompt token on each.
  int64_t heads = 0;
  for (const auto& [id, c] : a)
    if (c["policy"]["spec"] == "full")
      heads =
          c["memory"]["entries_hot"].get<int64_t>() / c["instance"]["prompt_tokens"].get<int64_t>();
  ASSERT_GT(heads, 0);
  std::vector<std::string> seen;
  for (const auto& [id, c] : a) {
    ASSERT_EQ(c["protocol"]["name"], "query_agnostic") << id;
    const int64_t context = c["protocol"]["compressed_tokens"].get<int64_t>();
    const int64_t prompt = c["instance"]["prompt_tokens"].get<int64_t>();
    ASSERT_GT(context, 200) << id;
    ASSERT_LT(context, prompt) << id;
    const std::string spec = c["policy"]["spec"].get<std::string>();
    // The budget is the context's (a ratio of it); the question is added
    // whole on every head and nothing is evicted after it.
    int64_t kept = -1;
    if (spec == "snapkv:budget=0.5") kept = Budget{.ratio = true, .value = 0.5}.tokens(context);
    // h2o streams: it evicts after every context chunk, never after the question.
    if (spec == "h2o:budget=48") kept = 48;
    if (kept < 0) continue;
    seen.push_back(spec);
    EXPECT_EQ(c["memory"]["entries_hot"].get<int64_t>(), heads * (kept + prompt - context)) << id;
  }
  EXPECT_EQ(seen.size(), 2u) << testing::PrintToString(seen);
}

// decoding.batch: an instance's cells decode their answers together, 5 at a
// time (the last batch shorter), one step of several caches. Every policy
// the registry builds, in both protocols, gives the same cells as when each
// decodes alone (timings aside); a batched cell says its batch and its
// batch's speed, and its own decode speed is left out (null), so the table's
// speed column shows none.
TEST(Run, BatchedDecodingChangesNoCell) {
  // Each configuration once; kvbench adds the full cache where it is not listed.
  std::string policies;
  std::set<std::string> specs = {"full"};
  for (const std::string& spec : test::registry_specs(48))
    if (specs.insert(to_string(parse_policy_spec(spec))).second)
      policies += std::string(policies.empty() ? "[" : ", ") + "\"" + spec + "\"";
  policies += "]";
  ASSERT_GT(specs.size(), 20u);
  for (const char* protocol : {"query_aware", "query_agnostic"}) {
    const std::string dir = scratch_dir(std::string("batch-") + protocol);
    const std::string path = dir + "/batch.json";
    std::ofstream(path) << R"({"name": "batch", "model": ")" << test::tiny_model_path()
                        << R"(", "threads": 2, "seed": 3,
      "tasks": [{"task": "niah", "lengths": [300], "depths": [0.5]}],
      "policies": )" << policies
                        << R"(, "decoding": {"chunk": 64, "max_new_tokens": 4, "protocol": ")"
                        << protocol << R"("}})";
    ASSERT_EQ(run_cli("run " + path + " -q --out " + dir + "/alone"), 0) << stderr_text();
    ASSERT_EQ(run_cli("run " + path + " -q --set decoding.batch=5 --out " + dir + "/batched"), 0)
        << stderr_text();
    const std::string batched = test::only_run_folder(dir + "/batched");
    const auto a = test::stable_cells(test::only_run_folder(dir + "/alone"));
    ASSERT_EQ(a.size(), specs.size()) << protocol;
    EXPECT_EQ(a, test::stable_cells(batched)) << protocol;
    std::map<int, int> sizes;  // batch size -> cells
    for (const json& c : RunFolder::open(batched).cells()) {
      const json& t = c["timing"];
      ++sizes[t["decode_batch"].get<int>()];
      EXPECT_TRUE(t["decode_tok_s"].is_null()) << c["id"];
      if (t["decode_steps"].get<int>() > 0) EXPECT_GT(t["decode_batch_tok_s"].get<double>(), 0.0);
    }
    const int n = static_cast<int>(a.size());
    EXPECT_EQ(sizes[5], n / 5 * 5) << protocol;
    if (n % 5) EXPECT_EQ(sizes[n % 5], n % 5) << protocol;
    EXPECT_EQ(read_json_file(batched + "/config.json")["decoding"]["batch"], 5);
    EXPECT_NE(test::slurp(batched + "/report.md").find("decoded up to 5 cells at a time"),
              std::string::npos);
    const json metrics = read_json_file(batched + "/metrics.json");
    ASSERT_EQ(metrics["table"].size(), a.size()) << protocol;  // one cell per configuration
    for (const json& row : metrics["table"]) {
      EXPECT_TRUE(row["timing"]["decode_tok_s"].is_null()) << row;
      EXPECT_TRUE(row["speed_rel"].is_null()) << row;
    }
  }
}

// --limit keeps the first N instances of each task entry (recorded in the
// run's config, so a resume or report sees the same grid); --model runs the
// grid on another file; --threads sets the config's thread count.
TEST(Run, LimitAndModelOptions) {
  const std::string dir = scratch_dir("limit");
  const std::string exp = write_experiment(dir);
  const std::string other = test::tiny_model_path(/*spm=*/true);
  std::string out;
  ASSERT_EQ(run_cli(exp + " --limit 1 --model " + other + " --dry-run", &out), 0) << stderr_text();
  EXPECT_EQ(out.rfind("tiny: 1 instances x 5 policies = 5 cells", 0), 0u) << out;
  ASSERT_EQ(run_cli(exp + " -q --limit 1 --threads 1 --model " + other + " --out " + dir + "/a"), 0)
      << stderr_text();
  const std::string run = test::only_run_folder(dir + "/a");
  const json config = read_json_file(run + "/config.json");
  EXPECT_EQ(config["limit"], 1);
  EXPECT_EQ(config["threads"], 1);
  // The report says how the run differs from the experiment it describes.
  const std::string report = test::slurp(run + "/report.md");
  EXPECT_NE(report.find("As run: " + exp.substr(4) +
                        ", changed on the command line by limit=1, "
                        "threads=1, model=" +
                        other),
            std::string::npos)
      << report;
  EXPECT_EQ(config["model"], other);
  EXPECT_EQ(test::stable_cells(run).size(), 5u);
  EXPECT_EQ(run_cli(exp + " --limit 0 --dry-run"), 2);
  EXPECT_NE(stderr_text().find("--limit: expected a count >= 1"), std::string::npos);
  EXPECT_EQ(run_cli("run --resume " + run + " --limit 2"), 2);
  EXPECT_EQ(run_cli(exp + " --threads 0 --dry-run"), 2);
  EXPECT_NE(stderr_text().find("--threads must be between 1 and 512"), std::string::npos);
  EXPECT_EQ(run_cli("run --resume " + run + " -t 2"), 2);
}

TEST(Run, PerplexityCellsBranchPoliciesThatNeedAttentionStatistics) {
  // A once-after-prefill policy that scores by attention branches from the
  // full cache's stream: that cache must collect the statistics (it was
  // created without them, and the cell was refused).
  const auto a = run_shared_and_unshared("ppl", R"(
    "tasks": [{"task": "ppl", "lengths": [300]}],
    "policies": ["full", "h2o:budget=64,timing=once", "tova:budget=64,timing=once", "window:budget=64"],
    "decoding": {"chunk": 64})");
  ASSERT_EQ(a.size(), 4u);
  for (const auto& [id, c] : a) {
    const std::string spec = c["policy"]["spec"].get<std::string>();
    // Compressing after the prompt leaves the prompt's perplexity as the full cache's.
    if (spec.find("timing=once") != std::string::npos) EXPECT_EQ(c["score"], 1.0) << id;
  }
}

TEST(Run, KilledAtRandomPointsThenResumedEqualsAnUninterruptedRun) {
  const std::string dir = scratch_dir("resume");
  const std::string exp = write_experiment(dir);
  const std::string exp_path = exp.substr(4);  // without "run "
  ASSERT_EQ(run_cli(exp + " -q --out " + dir + "/whole"), 0) << stderr_text();
  const auto whole = test::stable_cells(test::only_run_folder(dir + "/whole"));

  // Start, kill -9 once a random number of cells is done, resume; repeat.
  std::mt19937 rng(7);
  std::string folder;
  for (int round = 0; round < 3; ++round) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string binary = KVBENCH_BINARY;
      if (folder.empty())
        execl(binary.c_str(), binary.c_str(), "run", exp_path.c_str(), "-q", "--out",
              (dir + "/killed").c_str(), nullptr);
      else
        execl(binary.c_str(), binary.c_str(), "run", "-q", "--resume", folder.c_str(), nullptr);
      _exit(127);
    }
    const size_t target = 2 + rng() % 6;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      if (folder.empty() && fs::exists(dir + "/killed")) {
        for (const auto& e : fs::directory_iterator(dir + "/killed")) folder = e.path().string();
      }
      size_t cells = 0;
      if (!folder.empty() && fs::exists(folder + "/cells"))
        for (const auto& e : fs::directory_iterator(folder + "/cells"))
          cells += e.path().extension() == ".json";
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) break;  // finished before the kill
      if (cells >= target) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_FALSE(folder.empty());
  }
  std::string out;
  ASSERT_EQ(run_cli("run -q --resume " + folder, &out), 0) << stderr_text();
  // Nothing lost, nothing repeated: exactly the uninterrupted run's cells.
  EXPECT_EQ(test::stable_cells(folder), whole);
  // Every invocation that got as far as its first write is a session of the
  // run (harness/run/sessions.h): the first, the last, and the resumes in
  // between that were not killed as they started (the kill comes once enough
  // cells exist, which can be before a resume has written anything). A killed
  // one keeps the cells of the instances it finished, so the sessions' cells
  // add up to at most the run's; the last records what it ran.
  const json meta = json::parse(std::ifstream(folder + "/meta.json"));
  ASSERT_TRUE(meta.contains("sessions")) << meta.dump();
  EXPECT_GE(meta["sessions"].size(), 2u) << meta["sessions"].dump();
  EXPECT_LE(meta["sessions"].size(), 4u) << meta["sessions"].dump();
  int64_t counted = 0;
  for (const auto& s : meta["sessions"]) {
    EXPECT_EQ(s["git_commit"], KVBENCH_GIT_COMMIT);
    EXPECT_GE(s["seconds"].get<double>(), 0.0);
    counted += s["cells"].get<int64_t>();
  }
  EXPECT_LE(counted, static_cast<int64_t>(whole.size()));
  const auto ran = out.find("this invocation ran ");
  ASSERT_NE(ran, std::string::npos) << out;
  EXPECT_EQ(meta["sessions"].back()["cells"].get<int64_t>(), std::stoll(out.substr(ran + 20)));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(folder + "/cells"))
    files += e.path().extension() == ".json";
  EXPECT_EQ(files, whole.size());
}

// Runs `exp` with keep_prefills into out_dir and kills it (kill -9) as soon
// as the first instance's prefill is kept (its marker written), before all of
// that instance's cells are. Returns the run folder ("" when the run
// finished first).
std::string kill_when_a_prefill_is_kept(const std::string& exp, const std::string& out_dir) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string binary = KVBENCH_BINARY, exp_path = exp.substr(4);
    execl(binary.c_str(), binary.c_str(), "run", exp_path.c_str(), "-q", "--set",
          "keep_prefills=true", "--out", out_dir.c_str(), nullptr);
    _exit(127);
  }
  std::string folder;
  bool killed = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && !killed) {
    if (folder.empty() && fs::exists(out_dir))
      for (const auto& e : fs::directory_iterator(out_dir)) folder = e.path().string();
    // A marker seen: stop the run, look again (the instance may have finished
    // and removed it meanwhile), then kill it or let it go on.
    auto marker = [&] {
      std::error_code ec;
      if (folder.empty()) return false;
      for (const auto& e : fs::directory_iterator(folder + "/prefills", ec))
        if (e.path().extension() == ".json") return true;
      return false;
    };
    if (marker()) {
      kill(pid, SIGSTOP);
      if (marker()) {
        kill(pid, SIGKILL);
        killed = true;
      } else {
        kill(pid, SIGCONT);
      }
    }
    int status = 0;
    if (!killed && waitpid(pid, &status, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (killed) waitpid(pid, nullptr, 0);
  EXPECT_TRUE(killed) << "the run finished before its first prefill was kept";
  return killed ? folder : std::string();
}

TEST(Run, KeptPrefillsAreLoadedOnResumeAndChangeNoNumber) {
  const std::string dir = scratch_dir("kept");
  const std::string exp = write_experiment(dir);
  ASSERT_EQ(run_cli(exp + " -q --out " + dir + "/whole"), 0) << stderr_text();
  const auto whole = test::stable_cells(test::only_run_folder(dir + "/whole"));
  // Uninterrupted with keep_prefills: the same cells, and nothing left in prefills/.
  ASSERT_EQ(run_cli(exp + " -q --set keep_prefills=true --out " + dir + "/kept"), 0)
      << stderr_text();
  const std::string kept = test::only_run_folder(dir + "/kept");
  EXPECT_EQ(test::stable_cells(kept), whole);
  EXPECT_FALSE(fs::exists(kept + "/prefills"));

  // Killed as soon as the first instance's prefill is kept: the resume must load it.
  const std::string folder = kill_when_a_prefill_is_kept(exp, dir + "/killed");
  ASSERT_FALSE(folder.empty());
  std::string out;
  ASSERT_EQ(run_cli("run -q --resume " + folder, &out), 0) << stderr_text();
  EXPECT_NE(out.find("(1 kept prefill loaded from the run folder)"), std::string::npos) << out;
  EXPECT_EQ(test::stable_cells(folder), whole);
  EXPECT_FALSE(fs::exists(folder + "/prefills"));
  EXPECT_EQ(read_json_file(folder + "/meta.json")["work"]["prefills_loaded"], 1);
}

TEST(Run, AKeptPrefillOfAnotherChunkIsNotUsed) {
  const std::string dir = scratch_dir("kept-swapped");
  const std::string exp = write_experiment(dir);
  ASSERT_EQ(run_cli(exp + " -q --out " + dir + "/whole"), 0) << stderr_text();
  const auto whole = test::stable_cells(test::only_run_folder(dir + "/whole"));
  const std::string folder = kill_when_a_prefill_is_kept(exp, dir + "/killed");
  ASSERT_FALSE(folder.empty());
  // The state after the whole prompt put where the state after a chunk was:
  // same model, same prompt tokens, same chunk size, a valid snapshot.
  int swapped = 0;
  for (const auto& e : fs::directory_iterator(folder + "/prefills")) {
    const std::string name = e.path().string();
    if (name.find(".after") == std::string::npos || e.path().extension() != ".kvc") continue;
    const std::string full = name.substr(0, name.find(".after")) + ".kvc";
    if (!fs::exists(full)) continue;
    fs::copy_file(full, name, fs::copy_options::overwrite_existing);
    ++swapped;
  }
  ASSERT_GT(swapped, 0)
      << "no chunk snapshot kept (the grid has a streaming policy that needs one)";
  std::string out;
  ASSERT_EQ(run_cli("run -q --resume " + folder, &out), 0) << stderr_text();
  EXPECT_NE(stderr_text().find("not using the kept prefill"), std::string::npos) << stderr_text();
  EXPECT_NE(stderr_text().find("prompt tokens, not"), std::string::npos) << stderr_text();
  EXPECT_EQ(out.find("kept prefill loaded"), std::string::npos) << out;
  EXPECT_EQ(test::stable_cells(folder), whole);
  EXPECT_FALSE(fs::exists(folder + "/prefills"));
}

TEST(Run, ShardsMergedEqualTheUnshardedRun) {
  const std::string dir = scratch_dir("shards");
  const std::string exp = write_experiment(dir, R"(, "output": ")" + dir + R"(/unused")");
  ASSERT_EQ(run_cli(exp + " -q --out " + dir + "/whole"), 0) << stderr_text();
  std::string shards;
  std::vector<std::string> folders;
  for (int i = 1; i <= 3; ++i) {
    const std::string out = dir + "/shard" + std::to_string(i);
    ASSERT_EQ(run_cli(exp + " -q --shard " + std::to_string(i) + "/3 --out " + out), 0)
        << stderr_text();
    folders.push_back(test::only_run_folder(out));
    shards += " " + folders.back();
  }
  // Only shards: every one of the split, none twice (a failed array task
  // must not merge into a run that silently lacks its cells).
  std::string ignored;
  EXPECT_EQ(run_cli("merge " + folders[0] + " " + folders[2] + " -o " + dir + "/m", &ignored), 2);
  EXPECT_NE(stderr_text().find("shard 2 of 3 missing"), std::string::npos) << stderr_text();
  EXPECT_EQ(run_cli("merge" + shards + " " + folders[1] + " -o " + dir + "/m", &ignored), 2);
  EXPECT_NE(stderr_text().find("shard 2 of 3 again"), std::string::npos) << stderr_text();
  EXPECT_FALSE(fs::exists(dir + "/m"));
  ASSERT_EQ(run_cli("merge" + shards + " -o " + dir + "/merged"), 0) << stderr_text();
  EXPECT_EQ(test::stable_cells(dir + "/merged", true),
            test::stable_cells(test::only_run_folder(dir + "/whole"), true));
  // The merged report has the full table.
  EXPECT_TRUE(fs::exists(dir + "/merged/report.html"));
  // The shards' sessions, each with its shard, and the report's run time.
  const json meta = json::parse(std::ifstream(dir + "/merged/meta.json"));
  ASSERT_EQ(meta["sessions"].size(), 3u) << meta.dump();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(meta["sessions"][i]["shard"], i + 1);
  std::ifstream md(dir + "/merged/report.md");
  const std::string report{std::istreambuf_iterator<char>(md), {}};
  EXPECT_NE(report.find("- run time: "), std::string::npos);
  EXPECT_NE(report.find("summed over 3 sessions"), std::string::npos);
  // One machine and build: on top, as a single run's; no list.
  EXPECT_TRUE(meta["cpu"].is_string());
  EXPECT_TRUE(meta["git_commit"].is_string());
  EXPECT_FALSE(meta.contains("machines"));

  // Shard 3 ran on another machine and build (its meta.json from someone
  // else: a hostile CPU name): the merge names each shard's, not the first's.
  const std::string other = dir + "/shard3-elsewhere";
  fs::copy(folders[2], other, fs::copy_options::recursive);
  json m3 = json::parse(std::ifstream(other + "/meta.json"));
  m3["cpu"] = "\x1b[31m|<b>EPYC";
  m3["git_commit"] = "abc`rm -rf`";
  std::ofstream(other + "/meta.json") << m3.dump();
  ASSERT_EQ(run_cli("merge " + folders[0] + " " + folders[1] + " " + other + " -o " + dir +
                    "/merged-machines"),
            0)
      << stderr_text();
  const json mm = json::parse(std::ifstream(dir + "/merged-machines/meta.json"));
  EXPECT_FALSE(mm.contains("cpu")) << mm.dump();
  EXPECT_FALSE(mm.contains("git_commit")) << mm.dump();
  ASSERT_EQ(mm["machines"].size(), 2u) << mm.dump();
  EXPECT_EQ(mm["machines"][0]["cpu"], meta["cpu"]);
  EXPECT_EQ(mm["machines"][0]["shards"], json::parse("[[1, 2]]"));
  EXPECT_EQ(mm["machines"][1]["cpu"], m3["cpu"]);
  EXPECT_EQ(mm["machines"][1]["shards"], json::parse("[[3, 3]]"));
  const std::string md2 = test::slurp(dir + "/merged-machines/report.md");
  const auto line = md2.find("- machines: ");
  ASSERT_NE(line, std::string::npos) << md2;
  const std::string machines_line = md2.substr(line, md2.find('\n', line) - line);
  EXPECT_NE(machines_line.find("shards 1–2"), std::string::npos) << machines_line;
  EXPECT_NE(machines_line.find("shard 3"), std::string::npos) << machines_line;
  EXPECT_EQ(md2.find('\x1b'), std::string::npos);
  EXPECT_EQ(md2.find("<b>"), std::string::npos);
  const std::string html = test::slurp(dir + "/merged-machines/report.html");
  EXPECT_NE(html.find("; machines: "), std::string::npos);
  EXPECT_EQ(html.find("<b>EPYC"), std::string::npos);
  // Only the CPU differs: the commit is said once, on top, not per machine.
  json m2 = json::parse(std::ifstream(folders[1] + "/meta.json"));
  const std::string cpu_only = dir + "/shard2-elsewhere";
  fs::copy(folders[1], cpu_only, fs::copy_options::recursive);
  m2["cpu"] = "Other CPU";
  std::ofstream(cpu_only + "/meta.json") << m2.dump();
  ASSERT_EQ(run_cli("merge " + folders[0] + " " + cpu_only + " " + folders[2] + " -o " + dir +
                    "/merged-cpus"),
            0)
      << stderr_text();
  const json mc = json::parse(std::ifstream(dir + "/merged-cpus/meta.json"));
  EXPECT_EQ(mc["git_commit"], meta["git_commit"]);
  ASSERT_EQ(mc["machines"].size(), 2u) << mc.dump();
  EXPECT_EQ(mc["machines"][0],
            json({{"cpu", meta["cpu"]}, {"shards", json::parse("[[1, 1], [3, 3]]")}}));
  EXPECT_EQ(mc["machines"][1], json({{"cpu", "Other CPU"}, {"shards", json::parse("[[2, 2]]")}}));
  // A list its reader refuses: one error line naming the field.
  json bad = mm;
  bad["machines"][1]["shards"] = json::parse("[[3, 1]]");
  std::ofstream(dir + "/merged-machines/meta.json") << bad.dump();
  EXPECT_EQ(run_cli("report " + dir + "/merged-machines", &ignored), 2);
  EXPECT_NE(stderr_text().find("meta.json: /machines/1/shards/0: expected [first, last]"),
            std::string::npos)
      << stderr_text();
}

TEST(Run, AShardResumesAsTheSameShard) {
  const std::string dir = scratch_dir("shard-resume");
  const std::string exp = write_experiment(dir);
  ASSERT_EQ(run_cli(exp + " -q --shard 1/2 --out " + dir + "/s"), 0) << stderr_text();
  const std::string folder = test::only_run_folder(dir + "/s");
  const auto done = test::stable_cells(folder, true);
  ASSERT_EQ(done.size(), 5u);  // one of the two instances x five policies
  // Lose a cell (the task was killed), resume: that cell again, nothing of
  // the other shard.
  fs::remove(fs::directory_iterator(folder + "/cells")->path());
  std::string out;
  ASSERT_EQ(run_cli("run -q --resume " + folder, &out), 0) << stderr_text();
  EXPECT_NE(out.find("this invocation ran 1, 4 were already done"), std::string::npos) << out;
  EXPECT_EQ(test::stable_cells(folder, true), done);
  std::string ignored;
  EXPECT_EQ(run_cli("run -q --resume " + folder + " --shard 2/2", &ignored), 2);
  EXPECT_NE(stderr_text().find("give no experiment, --set, --model, --threads, --limit, --out or "
                               "--shard"),
            std::string::npos)
      << stderr_text();
}

TEST(Run, BadConfigsGiveOneErrorLineAndLeaveNoRunFolder) {
  const std::string dir = scratch_dir("bad");
  const std::string exp = write_experiment(dir);
  const std::string out = dir + "/out";
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {exp + " --set tasks.0.lenghts=[1]", "/tasks/0/lenghts: unknown field"},
      {exp + " --set threads='\"two\"'", "/threads: expected an integer"},
      {exp + " --set tasks.0.task=needle", "needle"},
      {exp + " --set tasks.0.lengths=[100000]", "/tasks/0"},
      {exp + " --set policies.1.spec=nosuchpolicy", "/policies/1"},
      {exp + " --set policies.1.budgets=[0]", "/policies/1/budgets/0: a budget must be > 0"},
      {exp + " --shard 4/3", "--shard"},
      {exp + " --set decoding.protocol=agnostic", "/decoding/protocol: expected"},
      {exp + " --set decoding.protocol=query_agnostic --set decoding.question_first=true",
       "/decoding/question_first: the query_agnostic protocol needs the question after"},
      {exp + " --set decoding.protocol=query_agnostic --set tasks.0.question_first=true",
       "/tasks/0/question_first: the query_agnostic protocol"},
      {"run " + dir + "/missing.json", "missing.json"},
  };
  for (const auto& c : cases) {
    std::string stdout_text;
    EXPECT_EQ(run_cli(c.args + " -q --out " + out, &stdout_text), 2) << c.args;
    const std::string err = stderr_text();
    EXPECT_EQ(err.rfind("error: ", 0), 0u) << c.args << ": " << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find(c.message), std::string::npos) << c.args << ": " << err;
    EXPECT_TRUE(stdout_text.empty()) << stdout_text;
    EXPECT_FALSE(fs::exists(out) && !fs::is_empty(out)) << c.args << " left a run folder behind";
  }
  // An unwritable output location.
  std::ofstream(dir + "/a-file") << "x";
  EXPECT_EQ(run_cli(exp + " -q --out " + dir + "/a-file/sub"), 2);
  EXPECT_NE(stderr_text().find("a-file/sub"), std::string::npos) << stderr_text();
}

// The gate on a real run folder. With two instances per configuration and
// task no drop can be significant (mid-p McNemar needs four), so a degraded
// copy passes and compare says it could not have seen the drop; the exit
// codes of significant drops are tested on synthetic ten-instance folders
// (test_harness_results.cpp, CompareCli).
TEST(Run, CompareOnARealRunNeverCallsTwoInstancesARegression) {
  const std::string dir = scratch_dir("compare");
  const std::string exp = write_experiment(dir);
  // --history adds the finished run to a history database (test_history.cpp
  // tests the database itself).
  std::string run_out;
  ASSERT_EQ(run_cli(exp + " -q --out " + dir + "/base --history " + dir + "/h.sqlite", &run_out), 0)
      << stderr_text();
  EXPECT_NE(run_out.find("history: 10 cells added to " + dir + "/h.sqlite (0 already there)"),
            std::string::npos)
      << run_out;
  std::string shown;
  EXPECT_EQ(run_cli("history show --db " + dir + "/h.sqlite", &shown), 0) << stderr_text();
  EXPECT_NE(shown.find("| full | passkey | 0.000 [0.000, 0.658] n=2 |"), std::string::npos)
      << shown;
  const std::string base = test::only_run_folder(dir + "/base");
  EXPECT_EQ(run_cli("compare " + base + " " + base), 0);
  // Degrade a copy: one cell of a policy loses its score.
  fs::copy(base, dir + "/worse", fs::copy_options::recursive);
  // The tiny model scores 0 everywhere: raise the base instead, so the copy
  // reads as a drop of 1.0 on that cell.
  std::string victim;
  for (const auto& e : fs::directory_iterator(base + "/cells"))
    if (e.path().string().find("snapkv") != std::string::npos)
      victim = e.path().filename().string();
  ASSERT_FALSE(victim.empty());
  json cell = read_json_file(base + "/cells/" + victim);
  cell["score"] = 1.0;
  write_json_atomic(base + "/cells/" + victim, cell);
  std::string out;
  EXPECT_EQ(run_cli("compare " + base + " " + dir + "/worse --tolerance 0.1", &out), 0);
  EXPECT_NE(out.find("| drop not significant |"), std::string::npos) << out;
  EXPECT_NE(out.find("can call no drop significant: no drop, however large, fails the gate."),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("RESULT: no significant regression"), std::string::npos) << out;
  // A cell of BASE missing from NEW still fails the gate.
  fs::remove(dir + "/worse/cells/" + victim);
  EXPECT_EQ(run_cli("compare " + base + " " + dir + "/worse --tolerance 0.6", &out), 1);
  EXPECT_NE(out.find("1 instance(s) missing"), std::string::npos) << out;
}

}  // namespace
}  // namespace kvbench
