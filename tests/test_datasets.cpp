// Text sources, instances as JSON/JSONL, determinism, and the CLI's errors for
// bad datasets. Task lengths and depths: test_datasets_tasks.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "datasets/jsonl.h"
#include "datasets/tasks.h"
#include "datasets/text_source.h"
#include "model/common/error.h"
#include "model/llama_model.h"
#include "tests/support/cli_run.h"
#include "tests/support/input_error.h"
#include "tests/support/reference_llama.h"
#include "tests/support/scratch.h"
#include "tests/support/task_lengths.h"

namespace kvbench {
namespace {

using datasets::prose_paragraphs;
using datasets::split_sentences;
using test::slurp;

const LlamaModel& tiny() {
  static const auto model = LlamaModel::load(test::tiny_model_path());
  return *model;
}

bool have_debian_texts() {
  for (const char* p : {datasets::kGnuStandardsText, datasets::kGnuMaintainText,
                        datasets::kDebianReferenceText, datasets::kWordList})
    if (!std::filesystem::exists(p)) return false;
  return true;
}

TEST(TextSource, CleansManualTextIntoProse) {
  const std::string raw =
      "3.4 Standard C and Pre-Standard C\n"
      "=================================\n"
      "\n"
      "1989 Standard C is widespread enough now that it is ok to use its\n"
      "features in programs.  There is one excep-\n"
      "tion: do not ever use the \"trigraph\" feature of Standard C.\n"
      "\n"
      "     int\n"
      "     foo (int x)\n"
      "\n"
      "   See the manual for details on this, which we do not repeat (*note Bar::).\n"
      "\n"
      "   * Menu item one that is long enough to count as a paragraph of text.\n"
      "\n"
      "    Note\n"
      "\n"
      "\xC2\xA0\xC2\xA0 Programs should work with \xE2\x80\x9Cmultibyte\xE2\x80\x9D character "
      "encodings, such as UTF-8 "
      "and others.\n"
      "    They should not crash on bad input of any kind.\n";
  const auto paras = prose_paragraphs(raw);
  ASSERT_EQ(paras.size(), 2u) << (paras.empty() ? "" : paras[0]);
  EXPECT_EQ(paras[0],
            "1989 Standard C is widespread enough now that it is ok to use its features in "
            "programs. There is one "
            "exception: do not ever use the \"trigraph\" feature of Standard C.");
  EXPECT_EQ(paras[1],
            "Programs should work with \"multibyte\" character encodings, such as UTF-8 and "
            "others. They should not "
            "crash on bad input of any kind.");
}

TEST(TextSource, SplitsSentencesButNotAbbreviations) {
  const auto s = split_sentences(
      "See e.g. the manual by J. Smith. It works! (Really.) Does it? \"Yes.\" Mr. Brown agrees.");
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0], "See e.g. the manual by J. Smith.");
  EXPECT_EQ(s[1], "It works!");
  EXPECT_EQ(s[2], "(Really.)");
  EXPECT_EQ(s[3], "Does it?");
  EXPECT_EQ(s[4], "\"Yes.\"");
  EXPECT_EQ(s[5], "Mr. Brown agrees.");
}

TEST(TextSource, DebianPackagesGiveEnoughProseAndWords) {
  if (!have_debian_texts())
    GTEST_SKIP() << "gnu-standards / debian-reference-en / wamerican missing: run scripts/setup.sh";
  const auto& essay = datasets::essay_prose();
  const auto& reference = datasets::reference_prose();
  size_t essay_bytes = 0;
  for (const auto& s : essay.sentences) {
    essay_bytes += s.size();
    EXPECT_TRUE(s.back() == '.' || s.back() == '?' || s.back() == '!' || s.back() == ')' ||
                s.back() == '"' || s.back() == '\'')
        << s;
  }
  EXPECT_GT(essay.sentences.size(), 1000u);
  EXPECT_GT(essay_bytes, 100000u);  // > 20k tokens: an 8k haystack has room to start anywhere
  EXPECT_GT(reference.sentences.size(), 1000u);
  EXPECT_GT(datasets::dictionary_words().size(), 20000u);
}

TEST(Instances, JsonRoundTripIsExact) {
  for (const std::string& task : task_names()) {
    TaskRequest r{task, test::fitting_length(task, 300), 0.3, 2, 7, nlohmann::json::object()};
    const Instance in = generate_instance(r, tiny().tokenizer());
    const std::string line = to_json(in).dump();
    const Instance back = instance_from_json(nlohmann::json::parse(line));
    EXPECT_EQ(back, in) << task;
    EXPECT_EQ(to_json(back).dump(), line) << task;
  }
}

std::vector<Instance> a_bit_of_everything(uint64_t seed) {
  std::vector<Instance> out;
  for (const std::string& task : task_names())
    for (int s = 0; s < 2; ++s)
      out.push_back(generate_instance(
          {task, test::fitting_length(task, 250), s * 0.7, s, seed, nlohmann::json::object()},
          tiny().tokenizer()));
  out.push_back(generate_instance({"niah_multikey", 250, 0.5, 0, seed, {{"haystack", "needles"}}},
                                  tiny().tokenizer()));
  return out;
}

TEST(Instances, SameSeedGivesByteIdenticalJsonl) {
  const std::string dir = testing::TempDir();
  write_jsonl(dir + "a.jsonl", a_bit_of_everything(11));
  write_jsonl(dir + "b.jsonl", a_bit_of_everything(11));
  const std::string a = slurp(dir + "a.jsonl"), b = slurp(dir + "b.jsonl");
  EXPECT_GT(a.size(), 10000u);
  EXPECT_EQ(a, b);
  EXPECT_NE(to_jsonl(a_bit_of_everything(12)), a);  // the seed matters
  // Atomic write: nothing but the two files is left behind.
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  // And it reads back to the same instances.
  EXPECT_EQ(read_jsonl(dir + "a.jsonl"), a_bit_of_everything(11));
}

std::string read_error(const std::string& contents) {
  const std::string path = testing::TempDir() + "bad-" + std::to_string(::getpid()) + ".jsonl";
  std::ofstream(path, std::ios::binary) << contents;
  return test::input_error_of([&] { read_jsonl(path); });
}

TEST(Instances, MalformedJsonlNamesFileLineAndField) {
  const Instance good =
      generate_instance({"passkey", 200, 0.5, 0, 0, nlohmann::json::object()}, tiny().tokenizer());
  const std::string ok = to_json(good).dump() + "\n";
  const std::string path = testing::TempDir() + "bad-" + std::to_string(::getpid()) + ".jsonl";
  EXPECT_NE(read_error(ok + "\n" + "{\"id\": \n").find(path + ":3: malformed JSON"),
            std::string::npos)
      << read_error(ok + "\n{\"id\": \n");
  auto without = to_json(good);
  without.erase("context");
  EXPECT_EQ(read_error(without.dump() + "\n"), path + ":1: missing field 'context'");
  auto mistyped = to_json(good);
  mistyped["length"]["actual"] = "long";
  EXPECT_EQ(read_error(ok + mistyped.dump() + "\n"),
            path + ":2: field 'length.actual' has the wrong type (string)");
  auto outside = to_json(good);
  outside["needles"] = {{0, 1000000}};
  EXPECT_NE(read_error(outside.dump())
                .find(path + ":1: field 'needles': span [0, 1000000) is outside the context"),
            std::string::npos);
  EXPECT_EQ(read_error("[1, 2]\n"), path + ":1: an instance must be a JSON object");
  try {
    read_jsonl(testing::TempDir() + "does-not-exist.jsonl");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("does-not-exist.jsonl: cannot open"), std::string::npos);
  }
}

// The CLI: one line "error: ..." and exit 2 for bad datasets and requests.
using CliRun = test::CliResult;
CliRun kvbench(const std::string& args) { return test::run_kvbench(args); }
void expect_error(const CliRun& r, const std::string& contains) {
  test::expect_input_error(r, contains);
}

TEST(DatasetCli, GenerateShowAndErrors) {
  const std::string m = " --model " + test::tiny_model_path();
  const std::string out = testing::TempDir() + "cli-" + std::to_string(::getpid()) + ".jsonl";
  CliRun r = kvbench("dataset generate" + m +
                     " --task passkey,niah_single --lengths 150,250 --depths 0,1 -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto instances = read_jsonl(out);
  ASSERT_EQ(instances.size(), 8u);
  EXPECT_EQ(instances[0].id, "passkey-L150-D0-S0-R0");
  EXPECT_EQ(instances[7].id, "niah_single-L250-D100-S0-R0");
  r = kvbench("dataset show " + out + " --index 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(">>>The pass key number is " + instances[1].answers[0]), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[question] What is the pass key number?"), std::string::npos) << r.out;

  expect_error(kvbench("dataset generate" + m + " --task haystack --lengths 200 -o " + out),
               "task: unknown task 'haystack'");
  expect_error(kvbench("dataset generate" + m + " --task passkey --lengths 3 -o " + out),
               "length: 3 tokens cannot hold the needles");
  const std::string n_ctx = std::to_string(tiny().config().n_ctx_train);
  const std::string almost = std::to_string(tiny().config().n_ctx_train - 8);
  expect_error(
      kvbench("dataset generate" + m + " --task passkey --lengths " + n_ctx + " -o " + out),
      "--lengths: " + n_ctx + " tokens is not shorter than the model's context of " + n_ctx);
  expect_error(
      kvbench("dataset generate" + m + " --task passkey --lengths " + almost + " -o " + out),
      "beyond the model's context of " + n_ctx);  // the question and template do not fit
  expect_error(
      kvbench("dataset generate" + m + " --task passkey:haystack=moss --lengths 200 -o " + out),
      "options.haystack");
  expect_error(
      kvbench("dataset generate" + m + " --task passkey --lengths 200 --depths 1.5 -o " + out),
      "--depths: 1.5");
  const std::string bad = testing::TempDir() + "cli-bad-" + std::to_string(::getpid()) + ".jsonl";
  std::ofstream(bad) << slurp(out).substr(0, slurp(out).find('\n') + 1) << "{\"id\": 3}\n";
  expect_error(kvbench("dataset show " + bad), bad + ":2: field 'id' has the wrong type");
  expect_error(kvbench("dataset frobnicate"), "unknown subcommand 'frobnicate'");
}

}  // namespace
}  // namespace kvbench

namespace kvbench {
namespace {

// `dataset calibrate --records`: one record per instance, a second invocation
// reuses them (runs nothing, same table), hand-restored records without
// prompt_tokens are accepted, a malformed record is an error naming its line.
TEST(DatasetCli, CalibrateRecordsResumeAndBadRecordsAreErrors) {
  const std::string m = " --model " + test::tiny_model_path() + " -t 1";
  const std::string rec = testing::TempDir() + "calibrate-" + std::to_string(::getpid()) + ".jsonl";
  std::remove(rec.c_str());
  const std::string args =
      "dataset calibrate" + m + " --tasks passkey --lengths 200 --samples 2 --records " + rec;
  CliRun first = kvbench(args);
  ASSERT_EQ(first.code, 0) << first.err;
  std::vector<std::string> lines;
  {
    std::ifstream in(rec);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& l : lines) {
    const auto j = nlohmann::json::parse(l);
    EXPECT_EQ(j["task"], "passkey");
    EXPECT_TRUE(j["score"].is_number());
    EXPECT_GT(j["prompt_tokens"].get<int>(), 150);
  }
  // A record restored by hand, without prompt_tokens, still counts.
  auto j0 = nlohmann::json::parse(lines[0]);
  j0.erase("prompt_tokens");
  std::ofstream(rec) << j0.dump() << "\n" << lines[1] << "\n";
  CliRun again = kvbench(args);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, first.out);  // the same table, from the records
  size_t n = 0;
  {
    std::ifstream in(rec);
    for (std::string l; std::getline(in, l);) ++n;
  }
  EXPECT_EQ(n, 2u);  // nothing run again
  std::ofstream(rec, std::ios::app) << "{\"task\": \"passkey\", \"id\": \"x\"}\n";
  expect_error(kvbench(args), rec + ":3: malformed record");
  std::ofstream(rec) << "not json\n";
  expect_error(kvbench(args), rec + ":1: malformed record");
  std::remove(rec.c_str());
}

}  // namespace
}  // namespace kvbench
