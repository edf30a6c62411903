// Experiments of several models ("models"): the config field, one run folder
// for a tiny LLaMA and a tiny Gemma 3 (cells named by model, resumed and
// sharded runs equal to a whole one), the report sectioned by model, compare
// per model, and a single model's table left exactly as it was.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "harness/encode/markdown.h"
#include "harness/run/experiment.h"
#include "harness/run/file_names.h"
#include "harness/run/run_folder.h"
#include "model/common/error.h"
#include "tests/support/cli_run.h"
#include "tests/support/input_error.h"
#include "tests/support/reference_gemma3.h"
#include "tests/support/reference_llama.h"
#include "tests/support/run_output.h"
#include "tests/support/scratch.h"

namespace kvbench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::expect_input_error;
using test::run_kvbench;

std::string scratch_dir(const std::string& name) { return test::scratch_folder("models", name); }

// Cells by id without timing and work (what varies between runs and with
// how a run was split).
std::map<std::string, json> stable_cells(const std::string& dir) {
  return test::stable_cells(dir, /*drop_work=*/true);
}

// The tiny LLaMA (label: its file's stem) and the tiny Gemma 3 under a label
// that HTML, gnuplot and file names must each encode.
const char* kGemmaLabel = "Gemma <b>3</b> 'tiny' \\\" $x";
// kGemmaLabel in markdown (harness/encode/markdown.h): the tags' brackets
// and the '$' backslash-escaped, the backslash doubled.
const char* kGemmaLabelMarkdown = "Gemma \\<b\\>3\\</b\\> 'tiny' \\\\\" \\$x";

std::string write_two_model_experiment(const std::string& dir) {
  const std::string path = dir + "/two.json";
  const json config = {
      {"name", "two"},
      {"models",
       {test::tiny_model_path(), {{"path", test::tiny_gemma3_path()}, {"label", kGemmaLabel}}}},
      {"threads", 2},
      {"seed", 3},
      {"tasks", {{{"task", "passkey"}, {"lengths", {300}}, {"depths", {0.25, 0.75}}}}},
      {"policies", {"full", {{"spec", "window"}, {"budgets", {96}}}, "snapkv:budget=96"}},
      {"decoding", {{"chunk", 64}, {"max_new_tokens", 4}}}};
  std::ofstream(path) << config.dump(2);
  return path;
}

std::string tiny_label() { return fs::path(test::tiny_model_path()).stem().string(); }
// The prefix of each model's cell ids.
std::string tiny_key() { return model_file_key(tiny_label()) + "--"; }
std::string gemma_key() { return model_file_key(kGemmaLabel) + "--"; }

ExperimentConfig parse(const std::string& text) {
  return parse_experiment(json::parse(text), "x.json");
}

std::string parse_error(const std::string& text) {
  return test::input_error_of([&] { parse(text); }, "");
}

TEST(RunModels, TheModelsFieldIsParsedBoundedAndWrittenBack) {
  const std::string tail =
      R"(, "tasks": [{"task": "passkey", "lengths": [64]}], "policies": ["full"]})";
  // "model" alone reads back as "model" (config.json of such runs is unchanged).
  const ExperimentConfig one = parse(R"({"model": "m/a.gguf")" + tail);
  ASSERT_EQ(one.models.size(), 1u);
  EXPECT_EQ(one.models[0].label, "a");
  EXPECT_EQ(one.model, "m/a.gguf");
  EXPECT_FALSE(one.models_listed);
  const json back = to_json(one);
  EXPECT_EQ(back["model"], "m/a.gguf");
  EXPECT_FALSE(back.contains("models"));

  const ExperimentConfig two =
      parse(R"({"models": ["m/a.gguf", {"path": "m/b.gguf", "label": "Bee"}])" + tail);
  ASSERT_EQ(two.models.size(), 2u);
  EXPECT_EQ(two.models[0].label, "a");
  EXPECT_EQ(two.models[1].path, "m/b.gguf");
  EXPECT_EQ(two.models[1].label, "Bee");
  EXPECT_EQ(two.model, "m/a.gguf");
  const json written = to_json(two);
  EXPECT_FALSE(written.contains("model"));
  // The resolved form parses to the same models (a resumed run reads it).
  const ExperimentConfig again = parse_experiment(written, "config.json");
  ASSERT_EQ(again.models.size(), 2u);
  EXPECT_EQ(again.models[1].label, "Bee");
  EXPECT_EQ(to_json(again), written);

  EXPECT_NE(parse_error(R"({"model": "a.gguf", "models": ["b.gguf"])" + tail)
                .find("x.json: /models: give either \"model\" or \"models\", not both"),
            std::string::npos);
  std::string many = R"({"models": [)";
  for (int i = 0; i < 17; ++i)
    many += (i ? ", " : "") + std::string("\"m") + std::to_string(i) + ".gguf\"";
  EXPECT_NE(parse_error(many + "]" + tail).find("/models: at most 16 models, got 17"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"models": [])" + tail).find("/models: needs at least 1"),
            std::string::npos);
  EXPECT_NE(
      parse_error(R"({"models": ["x/a.gguf", "y/a.gguf"])" + tail).find("/models/1: the label 'a'"),
      std::string::npos);
  // Labels that differ only where file names cannot would share cells.
  EXPECT_NE(
      parse_error(R"({"models": [{"path": "a", "label": "p q"}, {"path": "b", "label": "p/q"}])" +
                  tail)
          .find("/models/1/label: the label 'p/q'"),
      std::string::npos);
  EXPECT_NE(parse_error(R"({"models": [{"path": "a", "label": "l\nm"}])" + tail)
                .find("/models/0/label: must not contain control characters"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"models": [{"path": "a", "lable": "x"}])" + tail)
                .find("/models/0/lable: unknown field"),
            std::string::npos);
  EXPECT_NE(
      parse_error(R"({"models": [{"label": "x"}])" + tail).find("/models/0: missing field 'path'"),
      std::string::npos);
  EXPECT_NE(parse_error(R"({"models": [3])" + tail).find("/models/0: expected a string"),
            std::string::npos);
}

TEST(RunModels, BothModelAndModelsOnTheCommandLineIsOneErrorAndNoFolder) {
  const std::string dir = scratch_dir("both");
  const std::string path = write_two_model_experiment(dir);
  expect_input_error(run_kvbench("run " + path + " -q --out " + dir + "/out --set model=a.gguf"),
                     "/models: give either \"model\" or \"models\", not both");
  // A model that does not load names its file; nothing is written.
  expect_input_error(run_kvbench("run " + path + " -q --out " + dir +
                                 "/out --set models.1.path=" + dir + "/none.gguf"),
                     "none.gguf");
  EXPECT_FALSE(fs::exists(dir + "/out"));
}

// --history adds a run of several models as one history run per model.
TEST(RunModels, HistoryKeepsEachModelsSeries) {
  const std::string dir = scratch_dir("history");
  const std::string path = write_two_model_experiment(dir);
  const auto r =
      run_kvbench("run " + path + " -q --out " + dir + "/out --history " + dir + "/h.sqlite");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("history: 12 cells added"), std::string::npos) << r.out;
  const auto show = run_kvbench("history show --db " + dir + "/h.sqlite");
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("| Model | Configuration | Task |"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find(" | 2 | "), std::string::npos) << show.out;  // two runs at the commit
  // Each model's own rows (kGemmaLabel holds markdown-hostile characters: escaped).
  EXPECT_NE(show.out.find("| " + tiny_label() + " | full | passkey |"), std::string::npos)
      << show.out;
  // Two instances per model, never the two models pooled into four.
  EXPECT_NE(show.out.find(" n=2 |"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find(" n=4 |"), std::string::npos) << show.out;
}

TEST(RunModels, OneFolderForTwoModelsResumedAndShardedEqualsAWholeRun) {
  const std::string dir = scratch_dir("two");
  const std::string path = write_two_model_experiment(dir);
  const auto whole_run = run_kvbench("run " + path + " -q --out " + dir + "/whole");
  ASSERT_EQ(whole_run.code, 0) << whole_run.err;
  const std::string whole_dir = test::only_run_folder(dir + "/whole");
  const auto whole = stable_cells(whole_dir);
  ASSERT_EQ(whole.size(), 12u);  // 2 models x 2 instances x 3 policies

  // Every cell names its model as meta.json records it; ids start with the model's key.
  const json meta = read_json_file(whole_dir + "/meta.json");
  ASSERT_EQ(meta["models"].size(), 2u);
  EXPECT_FALSE(meta.contains("model_sha256"));
  EXPECT_EQ(meta["plan"]["cells"], 12);
  EXPECT_EQ(meta["plan"]["models"], 2);
  std::map<std::string, int> per_label;
  for (const auto& [id, c] : whole) {
    const std::string label = c["model"]["label"].get<std::string>();
    ++per_label[label];
    const size_t k = label == tiny_label() ? 0 : 1;
    EXPECT_EQ(c["model"]["sha256"], meta["models"][k]["sha256"]) << id;
    EXPECT_EQ(c["model"]["file"],
              fs::path(meta["models"][k]["path"].get<std::string>()).filename().string());
    EXPECT_EQ(id.rfind(k == 0 ? tiny_key() : gemma_key(), 0), 0u) << id;
  }
  EXPECT_EQ(per_label[tiny_label()], 6);
  EXPECT_EQ(per_label[kGemmaLabel], 6);
  // The two models hold the same instance ids with different prompts (their
  // own tokenizers): the cells differ.
  EXPECT_NE(whole.at(tiny_key() + "passkey-L300-D25-S0-R3--full")["instance"]["prompt_tokens"],
            whole.at(gemma_key() + "passkey-L300-D25-S0-R3--full")["instance"]["prompt_tokens"]);

  // Resumed: lose a cell of each model, run again: exactly those two.
  const std::string resumed = dir + "/resumed";
  fs::copy(whole_dir, resumed, fs::copy_options::recursive);
  fs::remove(resumed + "/cells/" + tiny_key() + "passkey-L300-D75-S0-R3--snapkv_budget_96.json");
  fs::remove(resumed + "/cells/" + gemma_key() + "passkey-L300-D25-S0-R3--full.json");
  const auto r = run_kvbench("run -q --resume " + resumed);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("this invocation ran 2, 10 were already done"), std::string::npos) << r.out;
  EXPECT_EQ(stable_cells(resumed), whole);
  // Another model file where the run had one is refused, by name.
  json cfg = read_json_file(resumed + "/config.json");
  cfg["models"][0]["path"] = test::tiny_gemma3_path();
  write_json_atomic(resumed + "/config.json", cfg);
  expect_input_error(run_kvbench("run -q --resume " + resumed),
                     test::tiny_gemma3_path() + ": its sha256 differs");

  // Sharded in two, resumed shard, merged: the whole run's cells.
  std::string shards;
  for (int i = 1; i <= 2; ++i) {
    const std::string out = dir + "/shard" + std::to_string(i);
    const auto s =
        run_kvbench("run " + path + " -q --shard " + std::to_string(i) + "/2 --out " + out);
    ASSERT_EQ(s.code, 0) << s.err;
    const std::string folder = test::only_run_folder(out);
    EXPECT_EQ(stable_cells(folder).size(), 6u);  // one instance of each model
    shards += " " + folder;
  }
  const std::string first_shard = shards.substr(1, shards.find(' ', 1) - 1);
  fs::remove(fs::directory_iterator(first_shard + "/cells")->path());
  const auto rs = run_kvbench("run -q --resume " + first_shard);
  ASSERT_EQ(rs.code, 0) << rs.err;
  EXPECT_NE(rs.out.find("this invocation ran 1, 5 were already done"), std::string::npos) << rs.out;
  const auto m = run_kvbench("merge" + shards + " -o " + dir + "/merged");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(stable_cells(dir + "/merged"), whole);
}

// The experiment of write_two_model_experiment with one model, or (both)
// with the two models under their default labels, as a run of several models.
std::string write_experiment(const std::string& dir, const std::string& name, bool both) {
  const std::string path = dir + "/" + name + ".json";
  json config = {{"name", "two"},
                 {"threads", 2},
                 {"seed", 3},
                 {"tasks", {{{"task", "passkey"}, {"lengths", {300}}, {"depths", {0.25, 0.75}}}}},
                 {"policies", {"full", {{"spec", "window"}, {"budgets", {96}}}}},
                 {"decoding", {{"chunk", 64}, {"max_new_tokens", 4}}}};
  if (both)
    config["models"] = {test::tiny_model_path(), test::tiny_gemma3_path()};
  else
    config["model"] = test::tiny_model_path();
  std::ofstream(path) << config.dump(2);
  return path;
}

TEST(RunModels, RunsOfOneModelEachMergeIntoTheRunOfBoth) {
  const std::string dir = scratch_dir("merge-models");
  const std::string one = write_experiment(dir, "one", false);
  // The tiny LLaMA in two shards, the tiny Gemma 3 whole (--model).
  std::vector<std::string> folders;
  for (int i = 1; i <= 2; ++i) {
    const std::string out = dir + "/llama" + std::to_string(i);
    const auto r =
        run_kvbench("run " + one + " -q --shard " + std::to_string(i) + "/2 --out " + out);
    ASSERT_EQ(r.code, 0) << r.err;
    folders.push_back(test::only_run_folder(out));
  }
  const auto g = run_kvbench("run " + one + " -q --model " + test::tiny_gemma3_path() + " --out " +
                             dir + "/gemma");
  ASSERT_EQ(g.code, 0) << g.err;
  folders.push_back(test::only_run_folder(dir + "/gemma"));
  const auto both =
      run_kvbench("run " + write_experiment(dir, "both", true) + " -q --out " + dir + "/both");
  ASSERT_EQ(both.code, 0) << both.err;
  const std::string both_dir = test::only_run_folder(dir + "/both");

  const std::string merged = dir + "/merged";
  const auto m =
      run_kvbench("merge " + folders[0] + " " + folders[2] + " " + folders[1] + " -o " + merged);
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("merged 3 runs of 2 models, 8 cells"), std::string::npos) << m.out;
  // The cells and the config of the run of both models (ids with the models' keys).
  EXPECT_EQ(stable_cells(merged), stable_cells(both_dir));
  json config = read_json_file(merged + "/config.json"),
       expected = read_json_file(both_dir + "/config.json");
  config.erase("output");
  expected.erase("output");
  EXPECT_EQ(config, expected);
  // meta.json: each model's file, sha256, machine and build; the plan counts both.
  const json meta = read_json_file(merged + "/meta.json");
  const json both_meta = read_json_file(both_dir + "/meta.json");
  ASSERT_EQ(meta["models"].size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(meta["models"][k]["label"], both_meta["models"][k]["label"]);
    EXPECT_EQ(meta["models"][k]["sha256"], both_meta["models"][k]["sha256"]);
    EXPECT_TRUE(meta["models"][k]["cpu"].is_string());
    EXPECT_TRUE(meta["models"][k]["git_commit"].is_string());
  }
  EXPECT_FALSE(meta.contains("model"));
  EXPECT_FALSE(meta.contains("model_sha256"));
  EXPECT_EQ(meta["plan"]["cells"], 8);
  EXPECT_EQ(meta["plan"]["models"], 2);
  EXPECT_EQ(meta["merged_from"].size(), 3u);
  // Merged with the Gemma run first, its --model does not become the merged
  // run's: the models are listed apart.
  const auto has_model_override = [](const json& m) {
    for (const auto& o : m["invocation"]["overrides"])
      if (o.get<std::string>().rfind("model=", 0) == 0) return true;
    return false;
  };
  ASSERT_TRUE(has_model_override(read_json_file(folders[2] + "/meta.json")));
  const auto m2 = run_kvbench("merge " + folders[2] + " " + folders[0] + " " + folders[1] + " -o " +
                              dir + "/merged2");
  ASSERT_EQ(m2.code, 0) << m2.err;
  EXPECT_FALSE(has_model_override(read_json_file(dir + "/merged2/meta.json")));
  // The report has a section per model, and each model's CPU and commit.
  const std::string report = test::slurp(merged + "/report.md");
  EXPECT_NE(report.find("### Model: " + tiny_label()), std::string::npos);
  EXPECT_NE(report.find("- cells: 8 of 8"), std::string::npos) << report;
  EXPECT_NE(report.find(", CPU: "), std::string::npos);
  EXPECT_NE(report.find(", kvbench commit "), std::string::npos);

  // A model's missing shard, a run of several models beside another model's
  // run, and one model under two files of the same label: one error each,
  // nothing written.
  expect_input_error(run_kvbench("merge " + folders[0] + " " + folders[2] + " -o " + dir + "/x"),
                     "shard 2 of 2 missing");
  expect_input_error(run_kvbench("merge " + both_dir + " " + folders[2] + " -o " + dir + "/x"),
                     "holds several models");
  const std::string copy = dir + "/copy.gguf";
  fs::copy_file(test::tiny_gemma3_path(), copy);
  const auto c = run_kvbench("run " + one + " -q --model " + copy + " --out " + dir + "/copy");
  ASSERT_EQ(c.code, 0) << c.err;
  std::string copy_folder = test::only_run_folder(dir + "/copy");
  // The copy's cells carry the label "copy"; give them the original's.
  for (const auto& e : fs::directory_iterator(copy_folder + "/cells")) {
    json cell = read_json_file(e.path().string());
    cell["model"]["label"] = fs::path(test::tiny_gemma3_path()).stem().string();
    write_json_atomic(e.path().string(), cell);
  }
  expect_input_error(run_kvbench("merge " + folders[2] + " " + copy_folder + " -o " + dir + "/x"),
                     "has the same file key as another merged model's");
  EXPECT_FALSE(fs::exists(dir + "/x"));
}

TEST(RunModels, TheReportIsSectionedByModelWithOneScoreVsMemoryFigure) {
  const std::string dir = scratch_dir("report");
  const std::string path = write_two_model_experiment(dir);
  const auto r = run_kvbench("run " + path + " -q --out " + dir + "/out");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string run = test::only_run_folder(dir + "/out");
  const std::string table = test::slurp(run + "/table.md");
  const size_t a = table.find("### Model: " + tiny_label() + "\n");
  const size_t b = table.find(std::string("### Model: ") + kGemmaLabelMarkdown + "\n");
  ASSERT_NE(a, std::string::npos) << table;
  ASSERT_NE(b, std::string::npos) << table;
  EXPECT_LT(a, b);  // the config's order
  // A full row per model, each its own reference.
  size_t full_rows = 0;
  for (size_t at = table.find("| full | 100.0% |"); at != std::string::npos;
       at = table.find("| full | 100.0% |", at + 1))
    ++full_rows;
  EXPECT_EQ(full_rows, 2u) << table;
  const std::string csv = test::slurp(run + "/table.csv");
  EXPECT_EQ(csv.rfind("model,configuration,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\"Gemma <b>3</b> 'tiny' \\\"\" $x\",\"full\""), std::string::npos) << csv;
  const json metrics = read_json_file(run + "/metrics.json", 64 << 20);
  ASSERT_EQ(metrics["models"].size(), 2u);
  EXPECT_EQ(metrics["models"][1]["model"], kGemmaLabel);
  EXPECT_EQ(metrics["models"][1]["cells"], 6);
  EXPECT_EQ(metrics["models"][1]["table"].size(), 3u);

  // Labels are text in HTML: escaped in the report and the prediction pages.
  const std::string html = test::slurp(run + "/report.html");
  EXPECT_EQ(html.find("<b>3</b>"), std::string::npos);
  EXPECT_NE(html.find("<h3>Model: Gemma &lt;b&gt;3&lt;/b&gt; &#39;tiny&#39;"), std::string::npos);
  EXPECT_NE(html.find("href=\"predictions-2.html#config-0\""), std::string::npos);
  EXPECT_TRUE(fs::exists(run + "/predictions-1.html"));
  EXPECT_NE(test::slurp(run + "/predictions.html").find("href=\"predictions-2.html\""),
            std::string::npos);
  EXPECT_EQ(test::slurp(run + "/predictions-2.html").find("<b>3</b>"), std::string::npos);

  // Figures: per model numbered, one score-vs-memory with both (when gnuplot
  // is installed: scripts/setup.sh installs it).
  if (!fs::exists(run + "/plots/score-vs-memory.svg")) GTEST_SKIP() << "gnuplot missing";
  for (const char* f : {"heatmaps-1-task1", "heatmaps-2-task1", "needle-layers-1",
                        "needle-layers-2", "speed-1", "speed-2", "score-vs-budget"})
    EXPECT_TRUE(fs::exists(run + "/plots/" + std::string(f) + ".svg")) << f;
  EXPECT_FALSE(fs::exists(run + "/plots/heatmaps.svg"));
  const std::string svg = test::slurp(run + "/plots/score-vs-memory.svg");
  // Both models in the panel titles, the label as text (gnuplot's SVG escapes it).
  EXPECT_NE(svg.find(tiny_label()), std::string::npos);
  EXPECT_NE(svg.find("Gemma &lt;b"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

TEST(RunModels, CompareGoesModelByModelAndNamesAModelOfOneRunOnly) {
  const std::string dir = scratch_dir("compare");
  const std::string path = write_two_model_experiment(dir);
  ASSERT_EQ(run_kvbench("run " + path + " -q --out " + dir + "/two").code, 0);
  const std::string two = test::only_run_folder(dir + "/two");
  const auto same = run_kvbench("compare " + two + " " + two);
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_NE(same.out.find("### Model: " + tiny_label()), std::string::npos) << same.out;
  EXPECT_NE(same.out.find(std::string("### Model: ") + kGemmaLabelMarkdown + "\n"),
            std::string::npos)
      << same.out;
  EXPECT_NE(same.out.find("12 base cells, 12 new cells, 0 missing from new"), std::string::npos)
      << same.out;

  // The same grid on the tiny LLaMA alone ("model"): compared with its part
  // of the two-model run; the other model named, not an error.
  const auto one = run_kvbench("run " + path + " -q --out " + dir + "/one --set 'models=[\"" +
                               test::tiny_model_path() + "\"]'");
  ASSERT_EQ(one.code, 0) << one.err;
  const std::string one_dir = test::only_run_folder(dir + "/one");
  const auto c = run_kvbench("compare " + one_dir + " " + two);
  EXPECT_EQ(c.code, 0) << c.err;
  // (the label in markdown: the tags escaped, its backslash doubled)
  EXPECT_NE(c.out.find(std::string("- model ") + kGemmaLabelMarkdown + ": only in " +
                       markdown_text(two, 400) + ", not compared"),
            std::string::npos)
      << c.out;
  // Counted over the models compared.
  EXPECT_NE(c.out.find("6 base cells, 6 new cells, 0 missing from new"), std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("RESULT: no significant regression"), std::string::npos) << c.out;

  // Nothing in common: one error line.
  fs::copy_file(test::tiny_gemma3_path(), dir + "/copy.gguf");
  const auto g = run_kvbench("run " + path + " -q --out " + dir + "/g --set 'models=[\"" +
                             test::tiny_gemma3_path() + "\",\"" + dir + "/copy.gguf\"]'");
  ASSERT_EQ(g.code, 0) << g.err;
  expect_input_error(run_kvbench("compare " + one_dir + " " + test::only_run_folder(dir + "/g")),
                     "no model in common");
}

// Killed (kill -9) once a kept prefill exists, resumed: the kept prefill is
// named after the model too (two models share instance ids), is loaded, and
// the cells equal an uninterrupted run's.
TEST(RunModels, AKilledTwoModelRunWithKeptPrefillsResumesToTheWholeRun) {
  const std::string dir = scratch_dir("kept");
  const std::string path = write_two_model_experiment(dir);
  ASSERT_EQ(run_kvbench("run " + path + " -q --out " + dir + "/whole").code, 0);
  const auto whole = stable_cells(test::only_run_folder(dir + "/whole"));
  const std::string out = dir + "/killed";
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string binary = KVBENCH_BINARY;
    execl(binary.c_str(), binary.c_str(), "run", path.c_str(), "-q", "--set", "keep_prefills=true",
          "--out", out.c_str(), nullptr);
    _exit(127);
  }
  std::string folder, marker;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && marker.empty()) {
    std::error_code ec;
    if (folder.empty() && fs::exists(out))
      for (const auto& e : fs::directory_iterator(out, ec)) folder = e.path().string();
    if (!folder.empty()) {
      // Stop the run, then look: the instance may finish (and remove it) meanwhile.
      kill(pid, SIGSTOP);
      for (const auto& e : fs::directory_iterator(folder + "/prefills", ec))
        if (e.path().extension() == ".json") marker = e.path().filename().string();
      if (marker.empty()) kill(pid, SIGCONT);
    }
    int status = 0;
    if (marker.empty() && waitpid(pid, &status, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_FALSE(marker.empty()) << "the run finished before a prefill was kept";
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(marker.rfind(tiny_key(), 0) == 0 || marker.rfind(gemma_key(), 0) == 0) << marker;
  const auto r = run_kvbench("run -q --resume " + folder);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(1 kept prefill loaded from the run folder)"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("not using the kept prefill"), std::string::npos) << r.err;
  EXPECT_EQ(stable_cells(folder), whole);
  EXPECT_FALSE(fs::exists(folder + "/prefills"));
}

// A run of one model renders as before: the committed baseline folder's table
// re-rendered is byte for byte the committed one, also when its cells name
// their model as cells now do.
TEST(RunModels, ASingleModelFoldersTableDoesNotChange) {
  const std::string dir = scratch_dir("baseline");
  const std::string committed = std::string(KVBENCH_SOURCE_DIR) + "/results/baseline/quick";
  fs::copy(committed, dir + "/quick", fs::copy_options::recursive);
  ASSERT_EQ(run_kvbench("report " + dir + "/quick").code, 0);
  EXPECT_EQ(test::slurp(dir + "/quick/table.md"), test::slurp(committed + "/table.md"));
  EXPECT_EQ(test::slurp(dir + "/quick/table.csv"), test::slurp(committed + "/table.csv"));
  EXPECT_EQ(test::slurp(dir + "/quick/predictions.jsonl"),
            test::slurp(committed + "/predictions.jsonl"));
  const std::string config = test::slurp(dir + "/quick/config.json");
  const std::string stem =
      fs::path(json::parse(config)["model"].get<std::string>()).stem().string();
  for (const auto& e : fs::directory_iterator(dir + "/quick/cells")) {
    json c = read_json_file(e.path().string());
    c["model"] = {{"label", stem}, {"file", stem + ".gguf"}, {"sha256", "0"}};
    write_json_atomic(e.path().string(), c);
  }
  ASSERT_EQ(run_kvbench("report " + dir + "/quick").code, 0);
  EXPECT_EQ(test::slurp(dir + "/quick/table.md"), test::slurp(committed + "/table.md"));
  EXPECT_EQ(test::slurp(dir + "/quick/table.csv"), test::slurp(committed + "/table.csv"));
  // And compare with the baseline pairs them as before.
  const auto c = run_kvbench("compare " + committed + " " + dir + "/quick");
  EXPECT_EQ(c.code, 0) << c.out << c.err;
  EXPECT_EQ(c.out.find("### Model"), std::string::npos) << c.out;
  // A cell whose model is not an object is named.
  const auto first = fs::directory_iterator(dir + "/quick/cells")->path().string();
  json bad = read_json_file(first);
  bad["model"] = 5;
  write_json_atomic(first, bad);
  expect_input_error(run_kvbench("report " + dir + "/quick"), "/model: expected an object");
}

}  // namespace
}  // namespace kvbench
