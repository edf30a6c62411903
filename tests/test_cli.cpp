// The kvbench binary as users meet it: --help everywhere, exit codes, and
// one-line "error: <file>: <what>" for bad input with nothing on stdout.
#include <gtest/gtest.h>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>

#include "model/gguf/gguf.h"
#include "model/testing/tiny_model.h"
#include "tests/support/cli_run.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

using Result = test::CliResult;
Result run(const std::string& args) { return test::run_kvbench(args); }

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

using test::expect_input_error;

TEST(Cli, HelpOnEveryCommand) {
  for (const char* cmd : {"info", "generate", "tokenize", "logits", "perplexity", "tiny-model"}) {
    const Result r = run(std::string(cmd) + " --help");
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("usage: kvbench " + std::string(cmd)), std::string::npos) << cmd << r.out;
  }
  const Result top = run("--help");
  EXPECT_EQ(top.code, 0);
  EXPECT_NE(top.out.find("perplexity"), std::string::npos);
}

// --version names the commit the binary was built from (what a timing made
// with it cites; scripts/quant_decode.py reads it).
TEST(Cli, VersionNamesTheBuildCommit) {
  const Result r = run("--version");
  EXPECT_EQ(r.code, 0);
  const std::regex line(
      R"(kvbench \d+\.\d+\.\d+ \(commit ([0-9a-f]{7,64}|unknown)(, built with uncommitted changes)?\)\n)");
  EXPECT_TRUE(std::regex_match(r.out, line)) << r.out;
}

TEST(Cli, UsageErrorsExitWith2) {
  expect_input_error(run("frobnicate"), "unknown command 'frobnicate'");
  expect_input_error(run("info --no-such-flag"), "no-such-flag");
  expect_input_error(run("generate --model " + test::tiny_model_path()), "prompt");
  expect_input_error(run("generate --model " + test::tiny_model_path() + " --prompt hi --top-p 0"),
                     "--top-p");
  expect_input_error(
      run("generate --prompt hi --model " + test::tiny_model_path() + " --threads 0"), "--threads");
}

// A value with spaces left unquoted: the error names the word left over,
// wherever options and their values sit around it.
TEST(Cli, AnExtraArgumentIsNamed) {
  expect_input_error(run("run a.json b.json"), "unexpected argument 'b.json'");
  expect_input_error(run("run --set threads=1 a.json --limit 2 extra"),
                     "unexpected argument 'extra'");
  expect_input_error(run("run --set=x a.json -q other"), "unexpected argument 'other'");
  expect_input_error(run("info stray"), "unexpected argument 'stray'");
  expect_input_error(run("info stray"), "takes no file or folder argument");
}

TEST(Cli, InfoListsTensorTypes) {
  const Result r = run("info --model " + test::tiny_model_path() + " --tensors");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* type :
       {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q6_K", "F16", "BF16", "F32"})
    EXPECT_NE(r.out.find(std::string(type) + ":"), std::string::npos) << type;
  EXPECT_NE(r.out.find("layers 3"), std::string::npos);
  EXPECT_NE(r.out.find("blk.2.ffn_down.weight"), std::string::npos);
}

TEST(Cli, BadModelFilesGiveOneErrorLineNamingTheFile) {
  const std::string dir = testing::TempDir();
  expect_input_error(run("info --model " + dir + "does-not-exist.gguf"), "does-not-exist.gguf");

  const auto good = make_tiny_model({});
  std::vector<uint8_t> magic = good;
  magic[0] = 'X';
  write_file(dir + "bad-magic.gguf", magic);
  expect_input_error(run("info --model " + dir + "bad-magic.gguf"), "bad-magic.gguf: ");

  std::vector<uint8_t> cut(good.begin(), good.begin() + good.size() / 2);
  write_file(dir + "truncated.gguf", cut);
  expect_input_error(run("info --model " + dir + "truncated.gguf"), "truncated.gguf: ");
  expect_input_error(run("generate --prompt hi --model " + dir + "truncated.gguf"),
                     "truncated.gguf: ");
}

TEST(Cli, TokenizeAndGenerateOnTheTinyModel) {
  const std::string m = test::tiny_model_path();
  const Result tok = run("tokenize --model " + m + " --text 'hello world'");
  ASSERT_EQ(tok.code, 0) << tok.err;
  EXPECT_FALSE(tok.out.empty());
  EXPECT_EQ(tok.out.back(), '\n');
  const Result gen = run("generate --model " + m + " --prompt 'hello' --max-tokens 8 -t 2");
  ASSERT_EQ(gen.code, 0) << gen.err;
  EXPECT_NE(gen.err.find("prompt:"), std::string::npos);
  // Greedy decoding is deterministic: the same text twice.
  EXPECT_EQ(gen.out, run("generate --model " + m + " --prompt 'hello' --max-tokens 8 -t 2").out);
}

// Streaming past the training context (2048 on the tiny model) is refused
// unless asked for; the per-chunk NLL profile averages to the whole NLL.
TEST(Cli, PerplexityBeyondTheContextOnlyWhenAsked) {
  const std::string m = test::tiny_model_path();
  const std::string text = testing::TempDir() + "kvbench-long.txt";
  {
    std::ofstream out(text);
    for (int i = 0; i < 700; ++i) out << "the river runs by mill " << i << " and ";
  }
  const std::string args = "perplexity --model " + m + " -t 2 --file " + text +
                           " --ctx 2560 --chunk 512 --policy streaming:budget=256,pos=contiguous";
  expect_input_error(run(args), "(--beyond-context allows it)");
  const Result r = run(args + " --beyond-context --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("past the model's training context of 2048"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto chunks = j["chunk_nll"].get<std::vector<double>>();
  ASSERT_EQ(chunks.size(), 5u);
  // In each window chunk c scores 512 predictions (the last one 511).
  const double windows = j["windows"].get<double>();
  double sum = 0.0;
  for (size_t c = 0; c < chunks.size(); ++c)
    sum += chunks[c] * windows * (c + 1 < chunks.size() ? 512 : 511);
  EXPECT_NEAR(sum / j["scored"].get<double>(), j["nll"].get<double>(), 1e-9);
}

// --attention bf16 (with --fast only) moves perplexity by bfloat16's
// rounding: a different number, close to the f32 one.
TEST(Cli, PerplexityWithBf16AttentionNeedsFastAndStaysClose) {
  const std::string text = testing::TempDir() + "kvbench-bf16.txt";
  {
    std::ofstream out(text);
    for (int i = 0; i < 200; ++i) out << "the river runs by mill " << i << " and ";
  }
  const std::string args = "perplexity --model " + test::tiny_model_path() + " -t 2 --file " +
                           text + " --ctx 256 --json";
  expect_input_error(run(args + " --attention bf16"), "--attention bf16 needs the fast mode");
  const Result f32 = run(args + " --fast");
  const Result bf16 = run(args + " --fast --attention bf16");
  ASSERT_EQ(f32.code, 0) << f32.err;
  ASSERT_EQ(bf16.code, 0) << bf16.err;
  const double a = nlohmann::json::parse(f32.out)["ppl"].get<double>();
  const double b = nlohmann::json::parse(bf16.out)["ppl"].get<double>();
  EXPECT_NE(a, b);
  EXPECT_NEAR(b / a, 1.0, 1e-2) << a << " " << b;
}

// --attention int8q (with --fast only): one-token steps (--chunk 1) over an
// int4 cache score its keys against an int8 query, which moves the NLL
// (the random-weight model's is about 29 nats a token) by the query's
// rounding; the full f32 cache is untouched.
TEST(Cli, PerplexityWithInt8QueryScoresMovesOnlyQuantizedCaches) {
  const std::string text = testing::TempDir() + "kvbench-int8q.txt";
  {
    std::ofstream out(text);
    for (int i = 0; i < 60; ++i) out << "the river runs by mill " << i << " and ";
  }
  const std::string args = "perplexity --model " + test::tiny_model_path() + " -t 2 --file " +
                           text + " --ctx 96 --chunk 1 --fast --json";
  expect_input_error(run("perplexity --model " + test::tiny_model_path() + " --file " + text +
                         " --attention int8q"),
                     "--attention int8q needs the fast mode");
  const auto ppl = [&](const std::string& extra) {
    const Result r = run(args + extra);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? nlohmann::json::parse(r.out)["ppl"].get<double>() : 0.0;
  };
  const double int4 = std::log(ppl(" --policy full+int4"));
  const double int4_q = std::log(ppl(" --policy full+int4 --attention int8q"));
  EXPECT_NE(int4, int4_q);
  EXPECT_NEAR(int4_q / int4, 1.0, 1e-2) << int4 << " " << int4_q;
  EXPECT_EQ(ppl(""), ppl(" --attention int8q"));
}

TEST(Cli, SmolLM2AnswersParis) {
  const std::string m = test::smollm2_path();
  if (m.empty()) GTEST_SKIP() << "SmolLM2 not found: run scripts/setup.sh (or set KVBENCH_MODEL)";
  // generate's default is exact f32 activations. With --fast (8-bit
  // activations, as llama.cpp computes) SmolLM2 answers "L'Étoile, la
  // Marseillaise, ..." exactly as llama.cpp does: the first token's top-2
  // margin is 0.057 logits (see test_golden_llamacpp.cpp).
  const Result r = run("generate --model " + m +
                       " --chat --prompt 'What is the capital of France?' --max-tokens 24 -t 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Paris"), std::string::npos) << r.out;
  const Result fast =
      run("generate --model " + m +
          " --chat --prompt 'What is the capital of France?' --max-tokens 8 -t 2 --fast");
  ASSERT_EQ(fast.code, 0) << fast.err;
  EXPECT_EQ(fast.out.rfind("L'", 0), 0u)
      << "llama.cpp's greedy answer starts with L' (token 60): " << fast.out;
}

}  // namespace
}  // namespace kvbench
