// `kvbench report DIR --versus A B` on synthetic cells: which points are
// compared, the paired differences and their verdicts, the AUC over common
// ratios, missing measures, hostile names, the CLI writing nothing, and
// --task/--length choosing the instances.
#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

#include "harness/report/versus.h"
#include "harness/run/run_folder.h"
#include "model/common/error.h"
#include "tests/support/cli_run.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

// A cell of configuration `index` on instance i: family `family` at ratio
// budget `budget` ("family (budget b)"), or a configuration called `family`
// when budget is 0.
json cell(int i, int index, const std::string& family, double budget, double score,
          double nll = 2.0) {
  const std::string label =
      budget > 0 ? family + " (budget " + stats::format_estimate(budget, {}, "%g") + ")" : family;
  json policy = {{"index", index}, {"label", label}, {"spec", label}, {"is_reference", false}};
  if (budget > 0) policy["budget"] = budget;
  const std::string inst = "passkey-" + std::to_string(i);
  return {{"id", inst + "--" + std::to_string(index)},
          {"instance", {{"id", inst}, {"task", "passkey"}}},
          {"policy", policy},
          {"score", score},
          {"memory", {{"kv_bytes_hot", budget > 0 ? 1000.0 * budget : 1000.0}}},
          {"retention", {{"answer_nll", nll}, {"kl_full", 0.1}, {"top1_agreement", 0.9}}}};
}

// Ten instances: A scores 1 at budgets 0.5 and 0.25; B scores 1 at 0.5 and
// 0 at 0.25 (its NLL 1 nat higher there); C only at 0.1; "int4" one
// configuration scoring 1 on the even instances.
std::vector<json> cells() {
  std::vector<json> out;
  for (int i = 0; i < 10; ++i) {
    out.push_back(cell(i, 0, "A", 0.5, 1.0));
    out.push_back(cell(i, 1, "A", 0.25, 1.0));
    out.push_back(cell(i, 2, "B", 0.5, 1.0));
    out.push_back(cell(i, 3, "B", 0.25, 0.0, 3.0));
    out.push_back(cell(i, 4, "C", 0.1, 0.0));
    out.push_back(cell(i, 5, "int4", 0, i % 2 == 0 ? 1.0 : 0.0));
  }
  return out;
}

TEST(Versus, FamiliesArePairedAtEveryCommonRatioWithTheirAreas) {
  const Versus v = compare_versus(cells(), "A", "B");
  ASSERT_EQ(v.points.size(), 2u);
  // Compression ratios ascending: budget 0.5 is ratio 0.5, budget 0.25 is 0.75.
  EXPECT_DOUBLE_EQ(v.points[0].ratio, 0.5);
  EXPECT_EQ(v.points[0].a_label, "A (budget 0.5)");
  EXPECT_EQ(v.points[0].b_label, "B (budget 0.5)");
  EXPECT_EQ(v.points[0].n, 10);
  // Every instance the same: no difference, and the zero-width interval is
  // the identical pairs' (p = 1).
  EXPECT_DOUBLE_EQ(v.points[0].score.delta, 0.0);
  EXPECT_FALSE(v.points[0].score.differ);
  EXPECT_DOUBLE_EQ(v.points[0].score.p, 1.0);
  // Ten of ten instances higher by 1: the exact two-sided sign-flip p is
  // 2 / 2^10.
  const VersusPoint& at75 = v.points[1];
  EXPECT_DOUBLE_EQ(at75.ratio, 0.75);
  EXPECT_DOUBLE_EQ(at75.a_score, 1.0);
  EXPECT_DOUBLE_EQ(at75.b_score, 0.0);
  EXPECT_DOUBLE_EQ(at75.score.delta, 1.0);
  EXPECT_TRUE(at75.score.differ);
  EXPECT_NEAR(at75.score.p, 2.0 / 1024, 0.0015);
  EXPECT_DOUBLE_EQ(at75.answer_nll.delta, -1.0);  // A's NLL 2, B's 3
  EXPECT_TRUE(at75.answer_nll.differ);
  EXPECT_DOUBLE_EQ(at75.kl_full.delta, 0.0);
  EXPECT_DOUBLE_EQ(at75.memory, 1.0);
  // Areas over ratios 0.5 and 0.75: A 1, B 0.5.
  EXPECT_EQ(v.auc_ratios, (std::vector<double>{0.5, 0.75}));
  EXPECT_DOUBLE_EQ(v.a_auc, 1.0);
  EXPECT_DOUBLE_EQ(v.b_auc, 0.5);
  EXPECT_EQ(v.auc.n, 10);
  EXPECT_DOUBLE_EQ(v.auc.delta, 0.5);
  EXPECT_TRUE(v.auc.differ);

  const std::string md = versus_markdown(v);
  EXPECT_NE(md.find("| 0.75 | A (budget 0.25) | B (budget 0.25) | 10 | 1.000 | 0.000 | "
                    "+1.000 [+1.000, +1.000] (p = 0.001) | A higher |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 0.5 | A (budget 0.5) | B (budget 0.5) | 10 | 1.000 | 1.000 | "
                    "+0.000 [+0.000, +0.000] (p = 1) | not distinguished at n=10 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("A 1.000 [1.000, 1.000], B 0.500 [0.500, 0.500]; difference +0.500"),
            std::string::npos)
      << md;
  // What ten paired instances can show: 6 moving one way.
  EXPECT_NE(md.find("With n = 10 paired instances the smallest difference the test can call is "
                    "6 instances"),
            std::string::npos)
      << md;
}

TEST(Versus, AFamilyAgainstOneConfigurationAndTwoConfigurations) {
  // Family against a configuration: every ratio of the family.
  const Versus f = compare_versus(cells(), "int4", "A");
  ASSERT_EQ(f.points.size(), 2u);
  EXPECT_EQ(f.points[0].a_label, "int4");
  EXPECT_EQ(f.points[1].b_label, "A (budget 0.25)");
  EXPECT_DOUBLE_EQ(f.points[1].score.delta, -0.5);  // int4 passes 5 of 10
  EXPECT_DOUBLE_EQ(f.points[1].memory, 1000.0 / 250.0);
  EXPECT_TRUE(f.auc_ratios.empty());  // no area: int4 has no curve
  // Five instances lower by 1: 2 / 2^5 = 0.0625, not called.
  EXPECT_FALSE(f.points[1].score.differ);
  EXPECT_TRUE(f.points[1].score.split);  // the bootstrap interval alone excludes 0
  EXPECT_NE(versus_markdown(f).find("unsettled at n=10"), std::string::npos);
  // Two configurations by label: one point, at the ratio of the one that has one.
  const Versus c = compare_versus(cells(), "B (budget 0.25)", "int4");
  ASSERT_EQ(c.points.size(), 1u);
  EXPECT_DOUBLE_EQ(c.points[0].ratio, 0.75);
  EXPECT_DOUBLE_EQ(c.points[0].score.delta, -0.5);
}

TEST(Versus, AMissingMeasureLeavesOnlyThatMeasureShort) {
  std::vector<json> cs = cells();
  for (json& c : cs)
    if (c["policy"]["index"] == 3 && c["instance"]["id"] == "passkey-0")
      c["retention"]["answer_nll"] = nullptr;
  const Versus v = compare_versus(cs, "A", "B");
  EXPECT_EQ(v.points[1].n, 10);
  EXPECT_EQ(v.points[1].score.n, 10);
  EXPECT_EQ(v.points[1].answer_nll.n, 9);
  EXPECT_EQ(v.points[1].kl_full.n, 10);
}

TEST(Versus, UnknownNamesAndNoCommonRatioAreInputErrors) {
  try {
    compare_versus(cells(), "H2O\x1b[31m", "A");
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'H2O\\x1b[31m' is neither a policy family nor a configuration label"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("families: 'A', 'B', 'C'"), std::string::npos) << what;
  }
  EXPECT_THROW(compare_versus(cells(), "A", "C"), InputError);  // ratios 0.5, 0.75 against 0.9
}

TEST(Versus, NamesAreEscapedForMarkdown) {
  std::vector<json> cs;
  for (int i = 0; i < 3; ++i) {
    cs.push_back(cell(i, 0, "<img src=x onerror=alert(1)>|", 0.5, 1.0));
    cs.push_back(cell(i, 1, "B", 0.5, 0.0));
  }
  const std::string md = versus_markdown(compare_versus(cs, "<img src=x onerror=alert(1)>|", "B"));
  // Every '<', '>' and '|' of the name is escaped (a viewer shows it, no tag
  // opens, no cell ends).
  for (size_t at = md.find("<img"); at != std::string::npos; at = md.find("<img", at + 1))
    EXPECT_EQ(md[at - 1], '\\') << md;
  EXPECT_NE(md.find("\\<img src=x onerror=alert(1)\\>\\|"), std::string::npos) << md;
  // Three instances: no difference can be called.
  EXPECT_NE(md.find("With n = 3 paired instances no difference can be called"), std::string::npos)
      << md;
}

// A point whose configurations share no instance: nothing to pair, every
// value null in the JSON (never NaN, which JSON cannot hold).
TEST(Versus, APointWithoutPairsIsNullInJson) {
  std::vector<json> cs = {cell(0, 0, "A", 0.5, 1.0), cell(1, 1, "B", 0.5, 0.0)};
  const Versus v = compare_versus(cs, "A", "B");
  ASSERT_EQ(v.points.size(), 1u);
  EXPECT_EQ(v.points[0].n, 0);
  const json j = versus_json(v);
  const json& p = j["points"][0];
  EXPECT_TRUE(p["a_score"].is_null());
  EXPECT_TRUE(p["score"]["delta"].is_null());
  EXPECT_TRUE(p["score"]["ci"][0].is_null());
  EXPECT_TRUE(p["verdict"].is_null());
  EXPECT_TRUE(j["auc"].is_null());  // one common ratio: no area
  EXPECT_NO_THROW((void)j.dump());
  EXPECT_NE(
      versus_markdown(v).find("| 0.5 | A (budget 0.5) | B (budget 0.5) | 0 | – | – | – | – |"),
      std::string::npos)
      << versus_markdown(v);
}

TEST(Versus, SignFlipDetectsFromSixInstances) {
  EXPECT_EQ(stats::sign_flip_min_flips(5), 0);
  EXPECT_EQ(stats::sign_flip_min_flips(6), 6);
  EXPECT_EQ(stats::sign_flip_min_flips(104), 6);
  // The exact p of six identical differences (2 / 64) is what the Monte
  // Carlo test gives, and it is the first below 0.05.
  EXPECT_NEAR(stats::paired_permutation_p(std::vector<double>(6, 1.0)), 2.0 / 64, 0.005);
  EXPECT_GT(stats::paired_permutation_p(std::vector<double>(5, 1.0)), 0.05);
}

// The CLI prints the comparison and writes nothing; bad use is one error line.
TEST(Versus, CommandLinePrintsAndWritesNothing) {
  const std::string out = testing::TempDir() + "kvbench-versus-" + std::to_string(::getpid());
  RunFolder f = RunFolder::create(out, "versus", json{{"name", "versus"}}, json::object());
  for (const json& c : cells()) f.write_cell(c["id"].get<std::string>(), c);
  const std::string dir = f.dir();
  const test::CliResult r = test::run_kvbench("report '" + dir + "' --versus A B");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("**A against B**"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| A higher |"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/report.md"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/table.md"));
  // The same as JSON, for scripts.
  const test::CliResult j = test::run_kvbench("report '" + dir + "' --versus A B --json");
  ASSERT_EQ(j.code, 0) << j.err;
  const json doc = json::parse(j.out);
  EXPECT_EQ(doc["schema"], "kvbench-versus/1");
  ASSERT_EQ(doc["models"].size(), 1u);
  const json& m = doc["models"][0];
  EXPECT_EQ(m["min_detectable_flips"], 6);
  EXPECT_EQ(m["points"][1]["verdict"], "higher");
  EXPECT_DOUBLE_EQ(m["points"][1]["score"]["delta"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(m["auc"]["difference"]["delta"].get<double>(), 0.5);
  EXPECT_EQ(m["auc"]["verdict"], "higher");
  test::expect_input_error(test::run_kvbench("report '" + dir + "' --json"),
                           "--json goes with --versus");
  test::expect_input_error(test::run_kvbench("report '" + dir + "' --versus A"),
                           "--versus takes two names");
  test::expect_input_error(test::run_kvbench("report --versus A B '" + dir + "'"),
                           "the run folder goes before --versus");
  test::expect_input_error(test::run_kvbench("report '" + dir + "' --versus A Nope"),
                           "'Nope' is neither a policy family nor a configuration label");
  EXPECT_FALSE(std::filesystem::exists(dir + "/report.md"));
  f.remove();
}

// --task and --length pair only the instances of one task and/or length:
// here instances 0-4 are at 4096 tokens and 5-9 at 8000 (another task), and
// B loses at 0.25 only at 8000.
TEST(Versus, TaskAndLengthChooseTheInstances) {
  const std::string out =
      testing::TempDir() + "kvbench-versus-subset-" + std::to_string(::getpid());
  RunFolder f = RunFolder::create(out, "versus", json{{"name", "versus"}}, json::object());
  for (json c : cells()) {
    const int i = std::stoi(c["instance"]["id"].get<std::string>().substr(8));
    c["instance"]["length"] = i < 5 ? 4096 : 8000;
    if (i >= 5) c["instance"]["task"] = "niah_single";
    if (i < 5 && c["policy"]["label"] == "B (budget 0.25)") c["score"] = 1.0;
    f.write_cell(c["id"].get<std::string>(), c);
  }
  const std::string dir = f.dir();
  const auto auc_delta = [&](const std::string& only) {
    const test::CliResult j = test::run_kvbench("report '" + dir + "' --versus A B --json" + only);
    EXPECT_EQ(j.code, 0) << j.err;
    const json doc = json::parse(j.out);
    EXPECT_EQ(doc["models"][0]["n"], 5) << only;
    return doc["models"][0]["auc"]["difference"]["delta"].get<double>();
  };
  EXPECT_DOUBLE_EQ(auc_delta(" --length 4096"), 0.0);
  EXPECT_DOUBLE_EQ(auc_delta(" --length 8000"), 0.5);
  EXPECT_DOUBLE_EQ(auc_delta(" --task niah_single"), 0.5);
  EXPECT_DOUBLE_EQ(auc_delta(" --task passkey --length 4096"), 0.0);
  const test::CliResult md = test::run_kvbench("report '" + dir + "' --versus A B --length 8000");
  ASSERT_EQ(md.code, 0) << md.err;
  EXPECT_EQ(md.out.rfind("Only the instances at 8000 tokens.\n", 0), 0u) << md.out;
  EXPECT_NE(md.out.find("With n = 5 paired instances"), std::string::npos) << md.out;
  // No such instances, bad values, and the options without --versus.
  const auto refused = [&](const std::string& args, const std::string& error) {
    const test::CliResult r = test::run_kvbench("report '" + dir + "' " + args);
    test::expect_input_error(r, error);
    return r;
  };
  refused("--versus A B --task passkey --length 8000",
          "no instances of task passkey at 8000 tokens");
  refused("--versus A B --length 0",
          "--length: expected a context length of 1 token or more, got 0");
  refused("--versus A B --task ''", "--task: expected a task name of 1 to 100 bytes");
  refused("--length 8000", "--task and --length go with --versus A B");
  // A task holding a terminal escape and a newline: one escaped error line.
  const test::CliResult esc = refused("--versus A B --task \"$(printf 'a\\033[2Jb\\nc')\"",
                                      "no instances of task a\\x1b[2Jb");
  EXPECT_EQ(esc.err.find('\x1b'), std::string::npos) << esc.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/report.md"));
  f.remove();
}

}  // namespace
}  // namespace kvbench
