// The `duo` policy (head types after DuoAttention) and `kvbench heads`, the
// calibration pass that writes its file: retrieval heads keep every entry,
// streaming heads keep exactly sinks + the most recent; the heads file is
// bounded and every bad line is one error naming the file and the line.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "model/common/error.h"
#include "model/testing/tiny_model.h"
#include "policies/policy_cache.h"
#include "policies/registry.h"
#include "tests/support/cache_step.h"
#include "tests/support/cli_run.h"
#include "tests/support/input_error.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

constexpr int kLayers = 2, kKv = 2, kQ = 4, kDim = 8;

CacheContext ctx() {
  CacheContext c = test::test_cache_context({kLayers, kKv, kQ, kDim}, 1000);
  c.seed = 5;
  return c;
}

// A file this process owns (removed at exit by tests/support/temp_cleanup).
std::string write_heads(const std::string& tag, const std::string& text) {
  const std::string path = "/tmp/kvbench-duo-" + tag + "-" + std::to_string(getpid()) + ".txt";
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Prefill `n` tokens at positions 0.. in chunks of 7, then end the prefill.
void prefill(PolicyCache& cache, int n) {
  for (int src0 = 0; src0 < n; src0 += 7) {
    const int m = std::min(7, n - src0);
    const auto begun = test::begin_test_step(cache, src0, m);
    std::vector<float> k(m * kKv * kDim, 0.25f), v(k.size(), 0.5f);
    for (int l = 0; l < kLayers; ++l) cache.append(l, k.data(), v.data());
    cache.end_step();
  }
  cache.end_prefill();
}

std::set<int64_t> held(const PolicyCache& c, int l, int h) {
  const auto v = c.held_sources(l, h);
  return {v.begin(), v.end()};
}

// sinks + the last (budget - sinks) of n tokens.
std::set<int64_t> streaming(int n, int budget, int sinks) {
  std::set<int64_t> s;
  for (int i = 0; i < sinks; ++i) s.insert(i);
  for (int i = n - (budget - sinks); i < n; ++i) s.insert(i);
  return s;
}

TEST(Duo, WithoutAFileEveryHeadStreams) {
  auto c = PolicyCache::create(parse_policy_spec("duo:budget=10,sinks=3"), ctx());
  prefill(*c, 60);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) EXPECT_EQ(held(*c, l, h), streaming(60, 10, 3)) << l << h;
}

TEST(Duo, RetrievalHeadsKeepEverythingStreamingHeadsSinksAndRecent) {
  // Four heads; retrieval=0.5 makes the two highest scores retrieval heads.
  const std::string f = write_heads("good",
                                    "# layer kv_head score\n"
                                    "0 0 0.1\n"
                                    "0 1 0.9   # a retrieval head\n"
                                    "\n"
                                    "1 0 0.7\n"
                                    "1 1 0.2\n");
  auto c = PolicyCache::create(parse_policy_spec("duo:budget=10,sinks=3,retrieval=0.5,heads=" + f),
                               ctx());
  prefill(*c, 60);
  std::set<int64_t> all;
  for (int i = 0; i < 60; ++i) all.insert(i);
  EXPECT_EQ(held(*c, 0, 1), all);
  EXPECT_EQ(held(*c, 1, 0), all);
  EXPECT_EQ(held(*c, 0, 0), streaming(60, 10, 3));
  EXPECT_EQ(held(*c, 1, 1), streaming(60, 10, 3));
  // retrieval=1: every listed head keeps everything; 0: none does.
  auto every =
      PolicyCache::create(parse_policy_spec("duo:budget=10,sinks=3,retrieval=1,heads=" + f), ctx());
  prefill(*every, 60);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) EXPECT_EQ(held(*every, l, h), all);
  auto none =
      PolicyCache::create(parse_policy_spec("duo:budget=10,sinks=3,retrieval=0,heads=" + f), ctx());
  prefill(*none, 60);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) EXPECT_EQ(held(*none, l, h), streaming(60, 10, 3));
}

std::string error_of(const std::string& spec) {
  return test::input_error_of([&] { PolicyCache::create(parse_policy_spec(spec), ctx()); });
}

TEST(Duo, BadHeadsFilesGiveOneErrorNamingFileAndLine) {
  struct Case {
    const char* tag;
    std::string text, want;
  };
  const Case cases[] = {
      {"words", "0 0 0.5\nzero one two\n", ":2: expected \"layer kv_head score\""},
      {"short", "0 0\n", ":1: expected"},
      {"long", "0 0 0.5 7\n", ":1: expected"},
      {"negative", "0 -1 0.5\n", ":1: layer or head out of range"},
      {"nan", "0 0 nan\n", ":1:"},
      {"twice", "0 0 0.5\n1 1 0.2\n0 0 0.3\n", ":3: layer 0 head 0 listed twice"},
      {"shape", "0 0 0.5\n7 0 0.9\n", "names layer 7"},
      {"headshape", "0 5 0.9\n", "KV head 5"},
  };
  for (const Case& c : cases) {
    const std::string f = write_heads(c.tag, c.text);
    const std::string err = error_of("duo:heads=" + f + ",retrieval=1");
    EXPECT_EQ(err.rfind(f, 0), 0u) << c.tag << ": " << err;
    EXPECT_NE(err.find(c.want), std::string::npos) << c.tag << ": " << err;
  }
  EXPECT_NE(error_of("duo:heads=/tmp/kvbench-no-such-heads-file").find("cannot open"),
            std::string::npos);
  // Bounded: a file past 1 MiB is refused before it is parsed.
  const std::string big = write_heads("big", std::string((1 << 20) + 1, '#'));
  EXPECT_NE(error_of("duo:heads=" + big).find("larger than"), std::string::npos);
  // A FIFO is refused at once (reading it would wait for a writer forever).
  const std::string fifo = "/tmp/kvbench-duo-fifo-" + std::to_string(getpid());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of("duo:heads=" + fifo).find("not a regular file"), std::string::npos);
  // Moving budget between heads would break "retrieval heads keep all".
  EXPECT_NE(error_of("duo+adakv").find("uniform"), std::string::npos);
  EXPECT_EQ(error_of("duo+pyramid"), "(no error)");
}

// kvbench heads on the tiny model: one line per (layer, KV head), each a
// share in [0, 1]; the same file twice; duo reads it.
TEST(Duo, HeadsCommandWritesAFileDuoReads) {
  const std::string out = "/tmp/kvbench-heads-" + std::to_string(getpid()) + ".txt";
  const std::string cmd = "heads --model " + test::tiny_model_path() + " -o " + out +
                          " --length 160 --samples 2 --chunk 32 -t 2";
  const test::CliResult r = test::run_kvbench(cmd);
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  std::istringstream lines(text.str());
  std::string line;
  int n = 0;
  double total = 0.0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    int l = -1, h = -1;
    double s = -1;
    ASSERT_TRUE(f >> l >> h >> s) << line;
    EXPECT_EQ(l * TinyModelShape::n_kv_heads + h, n) << line;
    EXPECT_GE(s, 0.0);
    EXPECT_LE(s, 1.0);
    total += s;
    ++n;
  }
  EXPECT_EQ(n, TinyModelShape::n_layers * TinyModelShape::n_kv_heads);
  EXPECT_GT(total, 0.0);  // the answer attends to the needle somewhere
  ASSERT_EQ(test::run_kvbench(cmd).code, 0);
  std::ifstream again(out);
  std::stringstream text2;
  text2 << again.rdbuf();
  EXPECT_EQ(text.str(), text2.str());  // deterministic
  // Bad input: one error line, nothing written.
  test::expect_input_error(
      test::run_kvbench("heads --model " + test::tiny_model_path() + " -o " + out + " --samples 0"),
      "--samples");
  test::expect_input_error(
      test::run_kvbench("heads --model " + test::tiny_model_path() + " -o /tmp"), "/tmp");
}

}  // namespace
}  // namespace kvbench
