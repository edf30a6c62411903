// `kvbench cache save | info` and `kvbench ask` as users meet them, on the
// tiny model: a snapshot answers exactly like a fresh prefill (same logits
// digest, same answers), info shows metadata, tiers and ratios, and bad
// input of every kind is one line "error: <file>: <what>", exit 2, nothing
// on stdout and no output file left behind.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/testing/tiny_model.h"
#include "tests/support/cli_run.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using Result = test::CliResult;
Result run(const std::string& args) { return test::run_kvbench(args); }
using test::expect_input_error;

class SnapshotCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir() + "kvbench-snapcli-" + std::to_string(::getpid()) + "/";
    fs::create_directories(dir_);
    doc_ = dir_ + "doc.txt";
    std::ofstream out(doc_);
    for (int i = 0; i < 40; ++i)
      out << "The mill by the river ground grain for the town of Orlen " << i
          << " times each autumn. ";
    model_ = " --model " + test::tiny_model_path() + " -t 2";
  }
  std::string dir_, doc_, model_;
};

TEST_F(SnapshotCli, SaveInfoAskFromTheSnapshotEqualsAFreshPrefill) {
  for (const char* policy : {"full", "h2o:budget=64+int8"}) {
    SCOPED_TRACE(policy);
    const std::string kvc = dir_ + "doc.kvc";
    const Result save =
        run("cache save" + model_ + " --context " + doc_ + " --chunk 48 --policy '" + policy +
            "' --preamble 'Read.' --json -o " + kvc);
    ASSERT_EQ(save.code, 0) << save.err;
    const json s = json::parse(save.out);
    EXPECT_EQ(s["file_bytes"].get<uint64_t>(), fs::file_size(kvc));
    EXPECT_GT(s["tokens"].get<int>(), 400);

    const Result info = run("cache info " + kvc);
    ASSERT_EQ(info.code, 0) << info.err;
    for (const char* line :
         {"kvbench cache snapshot, format 3", "model       sha256 ", "document    ", "chunk 48",
          "precision   KV ", "  hot     ", "  cold    ", "compression ratio "})
      EXPECT_NE(info.out.find(line), std::string::npos) << line << "\n" << info.out;
    const json ij = json::parse(run("cache info --json " + kvc).out);
    EXPECT_EQ(ij["policy"]["spec"], policy);
    EXPECT_DOUBLE_EQ(
        ij["compression_ratio"].get<double>(),
        ij["payload"]["raw_bytes"].get<double>() / ij["payload"]["bytes"].get<double>());

    const std::string qs =
        " -q 'Which town?' -q 'What did the mill grind?' --answer-prefix 'Answer:' -n 6 --json";
    const Result loaded = run("ask" + model_ + " --cache " + kvc + qs);
    ASSERT_EQ(loaded.code, 0) << loaded.err;
    const Result fresh = run("ask" + model_ + " --context " + doc_ + " --chunk 48 --policy '" +
                             policy + "' --preamble 'Read.'" + qs);
    ASSERT_EQ(fresh.code, 0) << fresh.err;
    const json a = json::parse(loaded.out), b = json::parse(fresh.out);
    EXPECT_EQ(a["document"]["source"], "cache");
    EXPECT_EQ(a["document"]["tokens"], b["document"]["tokens"]);
    EXPECT_EQ(a["document"]["logits_sha256"], b["document"]["logits_sha256"]);
    ASSERT_EQ(a["answers"].size(), 2u);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(a["answers"][i]["first_logits_sha256"], b["answers"][i]["first_logits_sha256"]);
      EXPECT_EQ(a["answers"][i]["tokens"], b["answers"][i]["tokens"]);
    }
    // Plain output: one Q / A pair per question.
    const Result plain = run("ask" + model_ + " --cache " + kvc + " -q 'Which town?' -n 2");
    ASSERT_EQ(plain.code, 0) << plain.err;
    EXPECT_EQ(plain.out.rfind("Q: Which town?\nA: ", 0), 0u) << plain.out;
  }
}

// --kept: the ids that were prefilled and, per layer and KV head, the
// document positions attention reads after compression; a sliding window of
// 40 keeps exactly the last 40 positions of every head, the full cache all.
// And the key channels that are 0 in every one of those entries: none,
// unless the policy prunes channels (half of the 16 here).
TEST_F(SnapshotCli, KeptListsTheDocumentPositionsAttentionReads) {
  for (const char* policy :
       {"full", "window:budget=40,timing=once", "full+think:channels=0.5,window=4"}) {
    SCOPED_TRACE(policy);
    const Result r = run("ask" + model_ + " --context " + doc_ + " --policy '" + policy +
                         "' -q 'Which town?' -n 2 --json --kept");
    ASSERT_EQ(r.code, 0) << r.err;
    const json j = json::parse(r.out);
    const auto ids = j["document"]["token_ids"].get<std::vector<int>>();
    const int n = j["document"]["tokens"].get<int>();
    ASSERT_EQ(static_cast<int>(ids.size()), n);
    const json& kept = j["document"]["kept"];
    ASSERT_EQ(static_cast<int>(kept.size()), TinyModelShape::n_layers);
    const bool window = std::string(policy).starts_with("window");
    std::vector<int> want;
    for (int t = window ? n - 40 : 0; t < n; ++t) want.push_back(t);
    for (const json& layer : kept) {
      ASSERT_GE(layer.size(), 1u);
      for (const json& head : layer) EXPECT_EQ(head.get<std::vector<int>>(), want);
    }
    const json& zero = j["document"]["zero_key_channels"];
    ASSERT_EQ(zero.size(), kept.size());
    const size_t pruned = std::string(policy).find("think") != std::string::npos ? 8 : 0;
    for (size_t l = 0; l < zero.size(); ++l) {
      ASSERT_EQ(zero[l].size(), kept[l].size());
      for (const json& head : zero[l]) {
        const auto channels = head.get<std::vector<int>>();
        EXPECT_EQ(channels.size(), pruned);
        for (int c : channels) EXPECT_TRUE(c >= 0 && c < 16) << c;
      }
    }
    // The question suffix the answer was decoded after.
    EXPECT_FALSE(j["answers"][0]["suffix_ids"].empty());
  }
  expect_input_error(run("ask" + model_ + " --context " + doc_ + " -q x --kept"),
                     "--kept: needs --json");
}

TEST_F(SnapshotCli, BadInputIsOneLineExit2AndLeavesNoFile) {
  const std::string kvc = dir_ + "bad.kvc";
  expect_input_error(run("cache"), "cache: a subcommand is required");
  expect_input_error(run("cache frob"), "unknown subcommand 'frob'");
  expect_input_error(run("cache save" + model_ + " --context " + dir_ + "missing.txt -o " + kvc),
                     "missing.txt: cannot open");
  expect_input_error(
      run("cache save" + model_ + " --context " + doc_ + " --policy h2o:budget=x -o " + kvc),
      "--policy");
  expect_input_error(
      run("cache save" + model_ + " --context " + doc_ + " --compression lz4 -o " + kvc),
      "compression 'lz4'");
  expect_input_error(
      run("cache save" + model_ + " --context " + doc_ + " -o /nonexistent-dir/x.kvc"),
      "/nonexistent-dir/x.kvc");
  EXPECT_FALSE(fs::exists(kvc));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos);

  ASSERT_EQ(run("cache save" + model_ + " --context " + doc_ + " -o " + kvc).code, 0);
  expect_input_error(run("ask" + model_ + " --cache " + kvc + " --context " + doc_ + " -q x"),
                     "exactly one of --cache and --context");
  expect_input_error(run("ask" + model_ + " --cache " + kvc + " --chunk 8 -q x"),
                     "--chunk: the snapshot fixes it");
  expect_input_error(run("ask" + model_ + " --cache " + kvc + " --fast -q x"),
                     kvc + ": does not match this model / run: precision.activations");
  // Another model file (other weights, same shapes).
  const std::string other = dir_ + "other.gguf";
  TinyModelOptions o;
  o.seed = 3;
  write_tiny_model(other, o);
  expect_input_error(run("ask --model " + other + " --cache " + kvc + " -q x"),
                     kvc + ": does not match this model / run: model.sha256");
  // Truncated and corrupted copies.
  std::ifstream in(kvc, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(dir_ + "cut.kvc", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  expect_input_error(run("ask" + model_ + " --cache " + dir_ + "cut.kvc -q x"),
                     "cut.kvc: truncated or corrupt");
  expect_input_error(run("cache info " + dir_ + "cut.kvc"), "cut.kvc: truncated or corrupt");
  bytes[bytes.size() / 3] ^= 1;
  std::ofstream(dir_ + "flip.kvc", std::ios::binary) << bytes;
  expect_input_error(run("ask" + model_ + " --cache " + dir_ + "flip.kvc -q x"),
                     "flip.kvc: payload.sha256 does not match");
  expect_input_error(run("cache info " + doc_), "not a kvbench cache snapshot");
}

TEST_F(SnapshotCli, HelpListsTheCommands) {
  for (const char* cmd : {"cache save", "cache info", "ask"}) {
    const Result r = run(std::string(cmd) + " --help");
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("usage: kvbench "), std::string::npos) << r.out;
  }
  const Result top = run("--help");
  EXPECT_NE(top.out.find("  cache "), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("  ask "), std::string::npos) << top.out;
}

}  // namespace
}  // namespace kvbench
