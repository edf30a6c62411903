// Results plumbing on synthetic cells: the table's relative columns, the
// report files, compare's exit status and merge's checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <unistd.h>

#include "harness/report/compare.h"
#include "harness/report/compare_json.h"
#include "harness/report/curve_stats.h"
#include "harness/report/plot_script.h"
#include "harness/report/plots_ratio.h"
#include "harness/report/report.h"
#include "harness/report/table.h"
#include "harness/run/run_folder.h"
#include "model/common/atomic_file.h"
#include "model/common/error.h"
#include "tests/support/cli_run.h"
#include "tests/support/scratch.h"

namespace kvbench {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

json cell(const std::string& instance, int policy_index, const std::string& label, double score,
          double bytes, double decode_tok_s, bool reference = false, double depth = 0.5,
          int64_t length = 1024) {
  return {
      {"id", instance + "--" + label},
      {"instance", {{"id", instance}, {"task", "passkey"}, {"length", length}, {"depth", depth}}},
      {"policy",
       {{"index", policy_index},
        {"label", label},
        {"spec", label},
        {"is_reference", reference},
        {"base", label},
        {"budget", reference ? json(nullptr) : json(128)}}},
      {"prediction", "42"},
      {"answers", {"42"}},
      {"score", score},
      {"memory", {{"kv_bytes_hot", bytes}, {"kv_bytes_cold", 0.0}}},
      {"retention",
       {{"answer_nll", reference ? 1.0 : 1.5},
        {"kl_full", reference ? 0.0 : 0.2},
        {"top1_agreement", reference ? 1.0 : 0.5},
        {"needle_survival", reference ? 1.0 : 0.25}}},
      {"timing",
       {{"decode_tok_s", decode_tok_s},
        {"prefill_tok_s", 1000.0},
        {"ttft_seconds", 0.5},
        {"policy_share", 0.01}}}};
}

std::vector<json> synthetic() {
  std::vector<json> cells;
  for (int i = 0; i < 4; ++i) {
    const std::string inst = "passkey-" + std::to_string(i);
    const double depth = i % 2 ? 0.25 : 0.75;
    const int64_t len = i < 2 ? 1024 : 2048;
    cells.push_back(cell(inst, 0, "full", 1.0, 4000, 100, true, depth, len));
    cells.push_back(cell(inst, 1, "h2o", i < 3 ? 1.0 : 0.0, 1000, 110, false, depth, len));
  }
  return cells;
}

// Inference Speed pairs each cell with the full cache's on its instance:
// the median of the ratios, not the ratio of the medians, with a bootstrap
// interval of that median. Here the full cache ran at 100, 200, 100, 200,
// 100 tok/s (the machine's state moving between instances) and the policy
// at 1.1-1.5x of it on each: ratio of medians 1.3, median of ratios 1.3,
// but the pairs' interval stays inside [1.1, 1.5] where the unpaired
// speeds spread over 110-300.
TEST(Table, SpeedIsTheMedianPairedRatioWithItsInterval) {
  std::vector<json> cells;
  for (int i = 0; i < 5; ++i) {
    const std::string inst = "passkey-" + std::to_string(i);
    const double full = i % 2 ? 200 : 100;
    cells.push_back(cell(inst, 0, "full", 1.0, 4000, full, true));
    cells.push_back(cell(inst, 1, "h2o", 1.0, 1000, full * (1.1 + 0.1 * i)));
  }
  const auto rows = build_table(cells);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(*rows[1].speed_rel, 1.3);
  EXPECT_GE(rows[1].speed_rel_ci.lo, 1.1);
  EXPECT_LE(rows[1].speed_rel_ci.hi, 1.5);
  EXPECT_LT(rows[1].speed_rel_ci.lo, rows[1].speed_rel_ci.hi);
  EXPECT_TRUE(std::isnan(rows[0].speed_rel_ci.lo));  // full's own row
  // Fewer than 3 pairs: no interval.
  cells.resize(4);
  EXPECT_TRUE(std::isnan(build_table(cells)[1].speed_rel_ci.lo));
}

TEST(Table, RelativeColumnsAgainstFullOnTheSameInstances) {
  const auto rows = build_table(synthetic());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].label, "full");
  EXPECT_DOUBLE_EQ(*rows[0].score_rel, 1.0);
  EXPECT_DOUBLE_EQ(*rows[0].memory_rel, 1.0);
  EXPECT_EQ(rows[1].label, "h2o");
  EXPECT_DOUBLE_EQ(rows[1].score, 0.75);
  EXPECT_DOUBLE_EQ(*rows[1].score_rel, 0.75);
  EXPECT_DOUBLE_EQ(*rows[1].memory_rel, 0.25);
  EXPECT_DOUBLE_EQ(*rows[1].speed_rel, 1.1);
  EXPECT_DOUBLE_EQ(*rows[1].nll_delta, 0.5);
  EXPECT_DOUBLE_EQ(*rows[1].needle_survival, 0.25);
  const std::string md = table_markdown(rows);
  EXPECT_NE(md.find("| Configuration | Memory Usage | Inference Speed | Context Retention |"),
            std::string::npos);
  // Retention's interval: full scored 1 everywhere, so it is the score's
  // Wilson interval (3 of 4: [0.3006, 0.9544]) in percent; full's own row has none.
  // Speed: the median of the paired ratios (1.1 on every instance here, so
  // its interval has no width), none for full's own row.
  EXPECT_NE(md.find("| h2o | 25.0% | 1.10x [1.10, 1.10] | 75.0% [30.1, 95.4] |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| full | 100.0% | 1.00x | 100.0% |"), std::string::npos) << md;
  // The score with its Wilson interval (3 of 4: [0.3006, 0.9544]) and n.
  EXPECT_NE(md.find("| 0.750 [0.301, 0.954] | Wilson, n=4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.000 [0.510, 1.000] | Wilson, n=4 |"), std::string::npos) << md;
  EXPECT_EQ(rows[1].score_kind, stats::ScoreKind::PassFail);
  EXPECT_NEAR(rows[1].score_ci.lo, 0.300642, 1e-6);
  const std::string csv = table_csv({{"m", &rows}});
  // The model first; byte counts whole (not 1e+03).
  EXPECT_NE(csv.find("\"m\",\"h2o\",\"h2o\",4,0.25,1.1,0.75,1000,0,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.300642,0.954413,Wilson,0.300642,0.954413,"), std::string::npos) << csv;
  // ΔNLL, KL and top-1 agreement carry bootstrap intervals over the
  // instances (identical here: every instance moved by the same 0.5);
  // the full cache's own row compares nothing and has none. Top-1
  // agreement is a share: every instance at 0.5 leaves the bootstrap no
  // spread, so it takes Wilson's interval at 0.5 and n = 4 instead.
  EXPECT_DOUBLE_EQ(rows[1].nll_delta_ci.lo, 0.5);
  EXPECT_TRUE(std::isnan(rows[0].nll_delta_ci.lo));
  const stats::Interval w = stats::wilson_interval_at(0.5, 4);
  EXPECT_DOUBLE_EQ(rows[1].top1_agreement_ci.lo, w.lo);
  EXPECT_DOUBLE_EQ(rows[1].top1_agreement_ci.hi, w.hi);
  EXPECT_NEAR(w.lo, 0.150, 5e-4);
  EXPECT_NE(md.find("| +0.500 [+0.500, +0.500] | 0.2000 [0.2000, 0.2000] | 0.500 [0.150, 0.850] |"),
            std::string::npos)
      << md;
  EXPECT_NE(csv.find(",0.5,0.5,0.2,0.2,0.150"), std::string::npos) << csv;
  // Every row of the markdown table has as many cells as its header.
  std::istringstream lines(md);
  std::string line;
  std::vector<long> bars;
  while (std::getline(lines, line)) bars.push_back(std::count(line.begin(), line.end(), '|'));
  for (long b : bars) EXPECT_EQ(b, bars[0]) << md;
  // A fractional row takes the bootstrap, widened to at least Wilson's and
  // labelled so while every score is in [0, 1]; a score outside [0, 1]
  // leaves the bootstrap alone, and the label says that too.
  auto cells = synthetic();
  cells[3]["score"] = 0.5;
  const auto frac = build_table(cells);
  EXPECT_EQ(frac[1].score_kind, stats::ScoreKind::Fractional);
  EXPECT_TRUE(frac[1].score_wilson_floor);
  EXPECT_NE(table_markdown(frac).find("| bootstrap+Wilson, n=4 |"), std::string::npos);
  EXPECT_NE(table_csv({{"m", &frac}}).find(",bootstrap+Wilson,"), std::string::npos);
  EXPECT_EQ(table_json(frac)[1]["score_ci"]["method"], "bootstrap+Wilson");
  cells[3]["score"] = 1.5;
  const auto unbounded = build_table(cells);
  EXPECT_FALSE(unbounded[1].score_wilson_floor);
  EXPECT_NE(table_markdown(unbounded).find("| bootstrap, n=4 |"), std::string::npos);
  // Top-1 agreement of 1 on every instance (every position agrees with the
  // full cache: identical pairs) keeps [1, 1]; shares that differ keep the
  // bootstrap.
  cells = synthetic();
  for (int i = 1; i < 8; i += 2) cells[i]["retention"]["top1_agreement"] = 1.0;
  const auto agree = build_table(cells);
  EXPECT_DOUBLE_EQ(agree[1].top1_agreement_ci.lo, 1.0);
  EXPECT_DOUBLE_EQ(agree[1].top1_agreement_ci.hi, 1.0);
  for (int i = 1; i < 8; i += 2) cells[i]["retention"]["top1_agreement"] = 0.25 * (i / 2 + 1);
  const auto spread = build_table(cells);
  EXPECT_GE(spread[1].top1_agreement_ci.lo, 0.25);  // inside the values: not Wilson's [0.22, 0.91]
  EXPECT_LT(spread[1].top1_agreement_ci.lo, spread[1].top1_agreement_ci.hi);
  // When the full cache's scores differ between instances, retention's
  // interval is a bootstrap of the ratio of paired sums.
  cells = synthetic();
  cells[0]["score"] = 0.0;  // full fails instance 0, which h2o passes
  const auto varied = build_table(cells);
  EXPECT_DOUBLE_EQ(*varied[1].score_rel, 1.0);  // 3 / 3
  EXPECT_LT(varied[1].score_rel_ci.lo, 1.0);
  EXPECT_GT(varied[1].score_rel_ci.hi, 1.0);
  // A row failing every instance where the full cache's fractional scores
  // vary: the bootstrap's ratio is 0 in every resample, but four instances
  // cannot make that certain; the row's Wilson interval over the full
  // cache's mean (0 of 4: [0, 0.490] / 0.625) is given instead.
  cells = synthetic();
  for (int i = 0; i < 4; ++i) {
    cells[2 * i]["score"] = i % 2 ? 0.25 : 1.0;
    cells[2 * i + 1]["score"] = 0.0;
  }
  const auto failed = build_table(cells);
  EXPECT_DOUBLE_EQ(*failed[1].score_rel, 0.0);
  EXPECT_DOUBLE_EQ(failed[1].score_rel_ci.lo, 0.0);
  EXPECT_NEAR(failed[1].score_rel_ci.hi, stats::wilson_interval(0, 4).hi / 0.625, 1e-12);
}

RunFolder make_run(const std::string& name, const std::vector<json>& cells) {
  const std::string out = testing::TempDir() + "kvbench-results-" + std::to_string(::getpid());
  RunFolder f =
      RunFolder::create(out, name, json{{"name", name}}, json{{"plan", {{"cells", cells.size()}}}});
  for (const auto& c : cells) f.write_cell(c["id"].get<std::string>(), c);
  return f;
}

TEST(Report, WritesTableReportAndPlots) {
  const RunFolder run = make_run("report", synthetic());
  const ReportSummary s = write_report(run);
  EXPECT_EQ(s.cells, 8);
  for (const char* f : {"table.md", "table.csv", "metrics.json", "predictions.jsonl",
                        "predictions.html", "report.md", "report.html"})
    EXPECT_TRUE(fs::exists(run.path(f))) << f;
  if (s.plot_warning.empty()) {
    // One heatmap figure per task with every configuration (small
    // multiples), no file per label.
    for (const char* f :
         {"plots/heatmaps-task1.png", "plots/heatmaps-task1.svg", "plots/score-vs-memory.png",
          "plots/score-vs-budget.png", "plots/speed.svg"})
      EXPECT_GT(fs::file_size(run.path(f)), 1000u) << f;
    EXPECT_FALSE(fs::exists(run.path("plots/heatmap-h2o.png")));
    EXPECT_FALSE(fs::exists(run.path("plots/heatmaps-task2.png")));  // one task
  }
  std::ifstream in(run.path("report.html"));
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The opening sentences, the plots as images and a link from every cell
  // to its prediction.
  EXPECT_NE(html.find("<li>The full cache (full) scores 1.000 [0.510, 1.000] (n=4)"),
            std::string::npos);
  // The run's arithmetic (no decoding fields: the defaults), in both reports.
  EXPECT_NE(html.find("; arithmetic: fast (8-bit activations), f32 attention;"), std::string::npos);
  std::ifstream md_in(run.path("report.md"));
  const std::string md((std::istreambuf_iterator<char>(md_in)), std::istreambuf_iterator<char>());
  EXPECT_NE(md.find("\n- arithmetic: fast (8-bit activations), f32 attention\n"),
            std::string::npos);
  if (s.plot_warning.empty())
    EXPECT_NE(html.find("<img src=\"plots/heatmaps-task1.svg\""), std::string::npos);
  EXPECT_NE(html.find("<a href=\"predictions.html#cell-passkey-3--h2o\">0.00</a>"),
            std::string::npos);
  std::ifstream pin(run.path("predictions.html"));
  const std::string page((std::istreambuf_iterator<char>(pin)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("<tr id=\"cell-passkey-3--h2o\">"), std::string::npos);
  EXPECT_EQ(read_json_file(run.path("metrics.json"))["cells"], 8);
  run.remove();
}

// Ten instances of one configuration ("h2o") on passkey with the given
// scores, and the full cache scoring 1 on each.
std::vector<json> ten(const std::vector<double>& h2o_scores) {
  std::vector<json> cells;
  for (size_t i = 0; i < h2o_scores.size(); ++i) {
    const std::string inst = "passkey-" + std::to_string(i);
    cells.push_back(cell(inst, 0, "full", 1.0, 4000, 100, true));
    cells.push_back(cell(inst, 1, "h2o", h2o_scores[i], 1000, 110));
  }
  return cells;
}

// Ten passing instances, the first `flips` of them failing.
std::vector<double> passing_but(int flips) {
  std::vector<double> s(10, 1.0);
  for (int i = 0; i < flips; ++i) s[i] = 0.0;
  return s;
}

// The report's row for h2o (the full cache's row comes first).
std::string h2o_row(const std::string& report) {
  const auto at = report.find("| h2o | passkey |");
  return at == std::string::npos ? "" : report.substr(at, report.find('\n', at) - at);
}

// The leaderboard's figure: configurations with ratio budgets, by family
// (the label before " (budget X)") and RULER category.
TEST(Plots, ScoreVsRatioFamiliesAndTaskGroups) {
  EXPECT_EQ(policy_family("SnapKV (budget 0.25)"), "SnapKV");
  EXPECT_EQ(policy_family("snapkv 256"), "snapkv 256");
  EXPECT_EQ(policy_family("a (budget 0.5) b"), "a (budget 0.5) b");
  EXPECT_EQ(plot::task_group("niah_multikey"), "Retrieval");
  EXPECT_EQ(plot::task_group("passkey"), "Retrieval");
  EXPECT_EQ(plot::task_group("vt"), "Multi-hop tracing");
  EXPECT_EQ(plot::task_group("cwe"), "Aggregation");
  EXPECT_EQ(plot::task_group("fwe"), "Aggregation");
  EXPECT_EQ(plot::task_group("qa"), "QA");
  EXPECT_EQ(plot::task_group("ppl"), "ppl");
  std::vector<json> cells;
  for (int i = 0; i < 6; ++i)
    for (const char* task : {"passkey", "cwe"}) {
      const std::string inst = std::string(task) + "-" + std::to_string(i);
      json full = cell(inst, 0, "full", 1.0, 4000, 100, true);
      full["instance"]["task"] = task;
      cells.push_back(full);
      for (const double b : {0.5, 0.25}) {
        const std::string label = "H2O (budget " + std::string(b == 0.5 ? "0.5" : "0.25") + ")";
        json c = cell(inst, b == 0.5 ? 1 : 2, label, i % 2, 1000, 110);
        c["instance"]["task"] = task;
        c["policy"]["budget"] = b;
        c["id"] = inst + "--h2o-" + std::to_string(b == 0.5 ? 50 : 25);
        cells.push_back(c);
      }
    }
  const RunFolder run = make_run("ratio", cells);
  const ReportSummary s = write_report(run);
  if (s.plot_warning.empty()) {
    EXPECT_GT(fs::file_size(run.path("plots/score-vs-ratio.svg")), 1000u);
    std::ifstream in(run.path("plots/score-vs-ratio.svg"));
    const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const char* text : {"All tasks (12 instances)", "Retrieval (6 instances)",
                             "Aggregation (6 instances)", "Full cache", ">H2O<"})
      EXPECT_NE(svg.find(text), std::string::npos) << text;
    // Score vs budget draws them too, in a ratio panel of its own (and no
    // token panel: there are no token budgets).
    const std::string budget = test::slurp(run.path("plots/score-vs-budget.svg"));
    EXPECT_NE(budget.find("ratio budgets (2 points)"), std::string::npos);
    EXPECT_EQ(budget.find("token budgets"), std::string::npos);
  }
  // Token budgets alone draw no such figure.
  const RunFolder tokens = make_run("tokens", synthetic());
  write_report(tokens);
  EXPECT_FALSE(fs::exists(tokens.path("plots/score-vs-ratio.svg")));
  run.remove();
  tokens.remove();
}

// Ten families: the figure draws the eight of highest AUC, in their order,
// and score-vs-ratio-all draws all ten; the two lowest are only there.
TEST(Plots, ScoreVsRatioDrawsTheLeadersAndEveryFamilyApart) {
  std::vector<json> cells;
  for (int i = 0; i < 4; ++i) {
    const std::string inst = "passkey-" + std::to_string(i);
    cells.push_back(cell(inst, 0, "full", 1.0, 4000, 100, true));
    for (int f = 0; f < 10; ++f)
      for (const double b : {0.5, 0.25}) {
        // Family F<f> scores f / 10 at 0.5 and half that at 0.25: F9 leads,
        // F0 and F1 come last.
        const double score = f / 10.0 * (b == 0.5 ? 1.0 : 0.5);
        json c = cell(inst, 1 + 2 * f + (b == 0.5 ? 0 : 1),
                      "F" + std::to_string(f) + (b == 0.5 ? " (budget 0.5)" : " (budget 0.25)"),
                      score, 1000, 110);
        c["policy"]["budget"] = b;
        c["id"] = inst + "--f" + std::to_string(f) + "-" + (b == 0.5 ? "50" : "25");
        cells.push_back(c);
      }
  }
  const RunFolder run = make_run("ratio-top", cells);
  const ReportSummary s = write_report(run);
  if (s.plot_warning.empty()) {
    const std::string top = test::slurp(run.path("plots/score-vs-ratio.svg"));
    const std::string all = test::slurp(run.path("plots/score-vs-ratio-all.svg"));
    EXPECT_NE(top.find(">Score vs compression ratio: the 8 of 10 families with the highest AUC<"),
              std::string::npos);
    // Its second title line, apart: one line runs off a one-column figure.
    EXPECT_NE(top.find(">(every family: score-vs-ratio-all; bars and band: 95% intervals)<"),
              std::string::npos);
    for (int f = 0; f < 10; ++f) {
      const std::string name = ">F" + std::to_string(f) + "<";
      EXPECT_EQ(top.find(name) != std::string::npos, f >= 2) << name;
      EXPECT_NE(all.find(name), std::string::npos) << name;
    }
    EXPECT_LT(top.find(">F9<"), top.find(">F2<"));  // the legend in AUC order
    EXPECT_NE(test::slurp(run.path("report.html")).find("score-vs-ratio-all"), std::string::npos);
  }
  run.remove();
}

// The area under a family's score-vs-ratio curve, per instance (trapezoids
// over the tested ratios, divided by their range) and pooled, and a family
// against another paired over the same instances.
TEST(CurveStats, AreaUnderTheCurveAndPairedComparison) {
  // Budgets 0.5 and 0.25 are compression ratios 0.5 and 0.75. Family A:
  // ten instances scoring (1, 1), area 1; family B: (1, 0) on the same ten,
  // area 0.5; C only at one ratio: no curve.
  std::vector<json> cells;
  for (int i = 0; i < 10; ++i) {
    const std::string inst = "passkey-" + std::to_string(i);
    cells.push_back(cell(inst, 0, "full", 1.0, 4000, 100, true));
    int index = 1;
    for (const auto& [family, at50, at25] :
         {std::tuple{"A", 1.0, 1.0}, std::tuple{"B", 1.0, 0.0}, std::tuple{"C", 1.0, -1.0}})
      for (const double b : {0.5, 0.25}) {
        const double score = b == 0.5 ? at50 : at25;
        if (score < 0) continue;
        json c = cell(inst, index++,
                      std::string(family) + (b == 0.5 ? " (budget 0.5)" : " (budget 0.25)"), score,
                      1000, 110);
        c["policy"]["budget"] = b;
        cells.push_back(c);
      }
  }
  const std::vector<CurveFamily> f = curve_families(cells);
  ASSERT_EQ(f.size(), 2u);  // C has one ratio
  EXPECT_EQ(f[0].family, "A");
  EXPECT_EQ(f[0].ratios, (std::vector<double>{0.5, 0.75}));
  EXPECT_EQ(f[0].auc_of.size(), 10u);
  EXPECT_DOUBLE_EQ(f[0].auc, 1.0);
  EXPECT_DOUBLE_EQ(f[1].auc, 0.5);
  const CurvePair p = compare_curves(f[1], f[0]);
  EXPECT_EQ(p.n, 10);
  EXPECT_DOUBLE_EQ(p.delta, -0.5);
  // Ten of ten lower by 0.5: the exact sign-flip p is 2 / 2^10; the fixed
  // seed's 9,999 draws give 0.001.
  EXPECT_TRUE(p.differ);
  EXPECT_FALSE(p.split);
  EXPECT_NEAR(p.p, 2.0 / 1024, 0.0015);
  const std::string table = curve_table_markdown(cells);
  EXPECT_NE(table.find("| 1 | A | 0.5, 0.75 | 10 | 1.000 [1.000, 1.000] | – | – | leader |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| 2 | B | 0.5, 0.75 | 10 | 0.500 [0.500, 0.500] | -0.500 [-0.500, -0.500] "
                       "(n=10) | 0.001 | below the leader |"),
            std::string::npos)
      << table;
  // Three instances cannot tell even a large difference.
  cells.resize(3 * 6);  // instances 0..2 (full, A twice, B twice, C once each)
  const std::vector<CurveFamily> few = curve_families(cells);
  const CurvePair q = compare_curves(few[1], few[0]);
  EXPECT_FALSE(q.differ) << q.n << " " << q.p;
  EXPECT_LT(q.n, 4);
  // Three differences of -0.5: every resample's mean is -0.5, so the
  // bootstrap interval excludes 0, while the sign flips give |sum| >= 1.5 in
  // 2 of 8 patterns. The table says the two disagree instead of taking a side.
  EXPECT_TRUE(q.split);
  EXPECT_NEAR(q.p, 0.25, 0.02);
  EXPECT_NE(curve_table_markdown(cells).find("unsettled at n=3 (interval and test disagree)"),
            std::string::npos);
}

// The sign-flip test against exact enumeration of all 2^n sign patterns.
TEST(Stats, PairedPermutationMatchesEnumeration) {
  const std::vector<double> d{-0.3, -0.1, 0.05, -0.4, -0.2, 0.0, -0.25, 0.1};
  double observed = 0;
  for (double x : d) observed += x;
  int as_large = 0;
  for (int mask = 0; mask < 256; ++mask) {
    double sum = 0;
    for (int i = 0; i < 8; ++i) sum += (mask >> i & 1) ? d[i] : -d[i];
    as_large += std::fabs(sum) >= std::fabs(observed) * (1 - 1e-12);
  }
  const double exact = as_large / 256.0;
  EXPECT_NEAR(stats::paired_permutation_p(d), exact, 0.01) << exact;
  EXPECT_EQ(stats::paired_permutation_p(std::vector<double>{0.0, 0.0, 0.0}), 1.0);
  // Differences that cancel: no evidence either way.
  EXPECT_EQ(stats::paired_permutation_p(std::vector<double>{0.5, -0.5}), 1.0);
}

// A figure with many series (a report of every policy family, a history of
// many configurations): gnuplot's default cycles 8 colours with one marker,
// so series 1 and 9 looked alike. No two of the first 128 styles match, and
// the first 8 keep solid lines.
TEST(Plots, SeriesStylesDifferUpTo128) {
  std::set<std::string> styles;
  std::set<std::pair<std::string, int>> looks;  // colour and the marker it is drawn with
  for (size_t j = 0; j < 128; ++j) {
    const std::string style = plot::series_style(j);
    styles.insert(style);
    const size_t pt = style.find(" pt ");
    ASSERT_NE(pt, std::string::npos) << style;
    looks.insert({plot::series_colour(j), std::stoi(style.substr(pt + 4))});
    if (j < 8) EXPECT_NE(style.find(" dt 1"), std::string::npos) << style;
  }
  EXPECT_EQ(styles.size(), 128u);
  EXPECT_EQ(looks.size(), 128u);
  std::set<std::string> colours;
  for (size_t j = 0; j < 8; ++j) colours.insert(plot::series_colour(j));
  EXPECT_EQ(colours.size(), 8u);
}

TEST(Compare, ANoiseSizedDropIsNoRegression) {
  const RunFolder base = make_run("base", ten(passing_but(0)));
  const RunFolder same = make_run("same", ten(passing_but(0)));
  const CompareResult r0 = compare_runs(base.dir(), same.dir(), 0.0);
  EXPECT_FALSE(r0.regressed);
  EXPECT_NE(r0.report.find("RESULT: no significant regression"), std::string::npos);

  // One of ten flips: a drop of 0.1 beyond the tolerance 0.05, one-sided
  // mid-p McNemar p = 0.25.
  const RunFolder one = make_run("one", ten(passing_but(1)));
  const CompareResult r1 = compare_runs(base.dir(), one.dir(), 0.05);
  EXPECT_FALSE(r1.regressed) << r1.report;
  EXPECT_EQ(h2o_row(r1.report),
            "| h2o | passkey | 10 | McNemar | 1.000 [0.722, 1.000] | 0.900 [0.596, 0.982] | -0.100 "
            "| 0.25 | 0.400 (4 of 10) | drop not significant |")
      << r1.report;
  EXPECT_NE(r1.report.find("RESULT: no significant regression"), std::string::npos);
  // The run says what it could have detected, and that the tolerance is below it.
  EXPECT_NE(r1.report.find("h2o / passkey: with 10 paired instances the McNemar test can call no "
                           "drop below 0.400 significant (4 of 10 instances losing their score): "
                           "a drop larger than the tolerance (0.050) but smaller than that passes "
                           "unseen."),
            std::string::npos)
      << r1.report;

  // Three of ten flip: p = 0.0625 (1/2 · 1/2^3), not significant. Mid-p
  // McNemar needs four discordant pairs, all one way (p = 0.031).
  const RunFolder three = make_run("three", ten(passing_but(3)));
  const CompareResult r3 = compare_runs(base.dir(), three.dir(), 0.05);
  EXPECT_FALSE(r3.regressed) << r3.report;
  EXPECT_NE(h2o_row(r3.report).find("| -0.300 | 0.0625 | 0.400 (4 of 10) | drop not significant |"),
            std::string::npos)
      << r3.report;
  for (const auto* f : {&base, &same, &one, &three}) f->remove();
}

// Beside the gate, compare says what memory and speed did. Speed is read
// against each run's own full cache: the new run's machine is twice as
// fast on every cell, which moves no configuration's speed; h2o's memory
// halved, which is a change (memory has no noise).
TEST(Compare, MemoryAndSpeedBesideTheGate) {
  std::vector<json> b = ten(passing_but(0)), n = ten(passing_but(0));
  for (json& c : n) {
    c["timing"]["decode_tok_s"] = c["timing"]["decode_tok_s"].get<double>() * 2;
    if (!c["policy"]["is_reference"].get<bool>()) c["memory"]["kv_bytes_hot"] = 500.0;
  }
  const RunFolder base = make_run("res-base", b), next = make_run("res-new", n);
  const CompareResult r = compare_runs(base.dir(), next.dir(), 0.05);
  EXPECT_FALSE(r.regressed) << r.report;
  EXPECT_NE(r.report.find("## Memory and speed (informational, not part of the gate)"),
            std::string::npos);
  EXPECT_NE(r.report.find("| h2o | 10 | 1000 B | 500 B | -50.0% | 1.10x | 1.10x | 1.00 [1.00, "
                          "1.00] |"),
            std::string::npos)
      << r.report;
  EXPECT_NE(r.report.find("| full | 10 | 3.9 KiB | 3.9 KiB | +0.0% | 1.00x | 1.00x |"),
            std::string::npos)
      << r.report;
  const json j = compare_json(r);
  ASSERT_EQ(j["resources"].size(), 2u);
  EXPECT_EQ(j["resources"][1]["configuration"], "h2o");
  EXPECT_DOUBLE_EQ(j["resources"][1]["new_hot_bytes"].get<double>(), 500.0);
  EXPECT_DOUBLE_EQ(j["resources"][1]["speed_change"].get<double>(), 1.0);
  base.remove();
  next.remove();
}

// Runs of different arithmetic (decoding.exact, decoding.attention) are
// compared, with a note first; runs of the same arithmetic get none.
TEST(Compare, AnotherArithmeticIsNamedFirst) {
  const std::string out = testing::TempDir() + "kvbench-results-" + std::to_string(::getpid());
  auto run_with = [&](const std::string& name, const json& decoding) {
    RunFolder f = RunFolder::create(out, name, json{{"name", name}, {"decoding", decoding}},
                                    json{{"plan", {{"cells", 10}}}});
    for (const auto& c : ten(passing_but(0))) f.write_cell(c["id"].get<std::string>(), c);
    return f;
  };
  const RunFolder f32 = run_with("f32", {{"exact", false}});
  const RunFolder bf16 = run_with("bf16", {{"exact", false}, {"attention", "bf16"}});
  const RunFolder exact = run_with("exact", {{"exact", true}});
  const RunFolder plain = make_run("plain", ten(passing_but(0)));  // no decoding: the defaults
  const CompareResult same = compare_runs(f32.dir(), plain.dir(), 0);
  EXPECT_EQ(same.report.find("Note:"), std::string::npos) << same.report;
  const CompareResult r = compare_runs(f32.dir(), bf16.dir(), 0);
  EXPECT_EQ(r.report.rfind("Note: the runs compute with different arithmetic (base: fast (8-bit "
                           "activations), f32 attention; new: fast (8-bit activations), bf16 "
                           "attention)",
                           0),
            0u)
      << r.report;
  EXPECT_FALSE(r.regressed);
  EXPECT_NE(compare_runs(exact.dir(), f32.dir(), 0).report.find("base: exact (f32 activations)"),
            std::string::npos);
  // Another protocol or chunking is named too: the same spec then is not
  // the same configuration.
  const RunFolder agnostic = run_with("agnostic", {{"protocol", "query_agnostic"}, {"chunk", 256}});
  const CompareResult ra = compare_runs(f32.dir(), agnostic.dir(), 0);
  EXPECT_NE(ra.report.find("Note: the runs decode differently (base: query-aware, chunk 512, "
                           "task's answer budget, question last; new: query-agnostic, chunk 256, "
                           "task's answer budget, question last)"),
            std::string::npos)
      << ra.report;
  for (const auto* f : {&f32, &bf16, &exact, &plain, &agnostic}) f->remove();
}

TEST(Compare, ASignificantDropBeyondTheToleranceRegresses) {
  const RunFolder base = make_run("base", ten(passing_but(0)));
  // Four of ten flip: one-sided mid-p McNemar p = 1/2 · 1/2^4 = 0.03125.
  const RunFolder four = make_run("four", ten(passing_but(4)));
  const CompareResult r = compare_runs(base.dir(), four.dir(), 0.05);
  EXPECT_TRUE(r.regressed);
  EXPECT_NE(h2o_row(r.report).find("| -0.400 | 0.03125 | 0.400 (4 of 10) | REGRESSED |"),
            std::string::npos)
      << r.report;
  EXPECT_NE(r.report.find("RESULT: regression"), std::string::npos);
  // Significant, but within a tolerance of 0.5: accepted.
  const CompareResult within = compare_runs(base.dir(), four.dir(), 0.5);
  EXPECT_FALSE(within.regressed);
  EXPECT_NE(h2o_row(within.report).find("significant drop within tolerance"), std::string::npos);
  // The other way round it is a significant improvement (the test with the
  // runs swapped), never a regression.
  const CompareResult better = compare_runs(four.dir(), base.dir(), 0.0);
  EXPECT_FALSE(better.regressed);
  EXPECT_NE(h2o_row(better.report).find("| +0.400 | 0.9688 | 0.400 (4 of 10) | improved |"),
            std::string::npos)
      << better.report;
  base.remove();
  four.remove();
}

TEST(Compare, FractionalScoresTakeThePairedBootstrap) {
  const std::vector<double> scores = {0.9, 0.8, 0.7, 0.6, 0.5, 0.9, 0.8, 0.7, 0.6, 0.5};
  const RunFolder base = make_run("base", ten(scores));
  auto one_lower = scores;
  one_lower[0] -= 0.5;  // one instance loses 0.5: mean -0.05, p about 0.35
  const RunFolder one = make_run("one", ten(one_lower));
  const CompareResult r1 = compare_runs(base.dir(), one.dir(), 0.01);
  EXPECT_FALSE(r1.regressed) << r1.report;
  EXPECT_NE(h2o_row(r1.report).find("| 10 | bootstrap+sign | 0.700 ["), std::string::npos)
      << r1.report;
  EXPECT_NE(h2o_row(r1.report).find("| 0.400 (4 of 10) | drop not significant |"),
            std::string::npos)
      << r1.report;
  // Three instances lose 0.4: mean -0.12; the bootstrap alone says p = 0.03,
  // the mid-p sign test 0.0625 (3 to 0): not significant.
  auto three_lower = scores, five_lower = scores;
  for (int i = 0; i < 3; ++i) three_lower[i] -= 0.4;
  const RunFolder three = make_run("three", ten(three_lower));
  const CompareResult r3 = compare_runs(base.dir(), three.dir(), 0.05);
  EXPECT_FALSE(r3.regressed) << r3.report;
  EXPECT_NE(h2o_row(r3.report).find("| -0.120 | 0.0625 | 0.400 (4 of 10) | drop not significant |"),
            std::string::npos)
      << r3.report;
  // Five lose 0.4: sign test p = 1/2 · 1/2^5, the bootstrap's smaller.
  for (int i = 0; i < 5; ++i) five_lower[i] -= 0.4;
  const RunFolder five = make_run("five", ten(five_lower));
  const CompareResult r5 = compare_runs(base.dir(), five.dir(), 0.05);
  EXPECT_TRUE(r5.regressed) << r5.report;
  EXPECT_NE(h2o_row(r5.report).find("| -0.200 | 0.01562 | 0.400 (4 of 10) | REGRESSED |"),
            std::string::npos)
      << r5.report;
  // Bit-identical run to run.
  EXPECT_EQ(compare_runs(base.dir(), five.dir(), 0.05).report, r5.report);
  for (const auto* f : {&base, &one, &three, &five}) f->remove();
}

TEST(Compare, MissingInstancesFailAndDuplicatesAreRefused) {
  const auto base_cells = synthetic();
  const RunFolder base = make_run("base", base_cells);
  auto fewer = base_cells;
  fewer.pop_back();
  const RunFolder missing = make_run("missing", fewer);
  const CompareResult r = compare_runs(base.dir(), missing.dir(), 1.0);
  EXPECT_TRUE(r.regressed);
  EXPECT_NE(r.report.find("1 instance(s) missing"), std::string::npos) << r.report;
  // Two cells of one configuration and task on one instance cannot be paired.
  auto twice = base_cells;
  json copy = twice[1];
  copy["id"] = "passkey-0--h2o-again";
  twice.push_back(copy);
  const RunFolder dup = make_run("dup", twice);
  try {
    compare_runs(base.dir(), dup.dir(), 0.0);
    ADD_FAILURE() << "duplicate instance accepted";
  } catch (const InputError& e) {
    // cells() reads them sorted by file name: "-again.json" before ".json".
    EXPECT_NE(std::string(e.what()).find(dup.dir() + "/cells/passkey-0--h2o.json: /instance/id: "
                                                     "'passkey-0' is also the instance of cell "
                                                     "'passkey-0--h2o-again'"),
              std::string::npos)
        << e.what();
  }
  for (const auto* f : {&base, &missing, &dup}) f->remove();
}

// ten()'s cells with h2o's label and spec replaced (cell ids end in the
// spec's budget: a file name may not hold ':' or '=').
std::vector<json> relabelled(std::vector<json> cells, const std::string& label,
                             const std::string& spec) {
  for (json& c : cells) {
    if (c["policy"]["label"] != "h2o") continue;
    c["policy"]["label"] = label;
    c["policy"]["spec"] = spec;
    c["id"] = c["instance"]["id"].get<std::string>() + "--" + spec.substr(spec.find('=') + 1);
  }
  return cells;
}

// Configurations are matched by spec: a label kept over a changed spec is
// another configuration (said in one line, the base's counted missing), a
// renamed label over the same spec is the same one.
TEST(Compare, ConfigurationsAreMatchedBySpecNotLabel) {
  const RunFolder base =
      make_run("base", relabelled(ten(passing_but(0)), "snapkv 256", "snapkv:budget=256"));
  // The case: the label kept, the budget changed, scores lower.
  const RunFolder changed =
      make_run("changed", relabelled(ten(passing_but(6)), "snapkv 256", "snapkv:budget=768"));
  const CompareResult r = compare_runs(base.dir(), changed.dir(), 0.05);
  EXPECT_TRUE(r.regressed) << r.report;  // the base's configuration is not in the new run
  EXPECT_NE(r.report.find("- 'snapkv 256' names spec `snapkv:budget=256` in the base run and "
                          "`snapkv:budget=768` in the new one: different configurations, not "
                          "compared (the base's is missing from the new run)\n"),
            std::string::npos)
      << r.report;
  EXPECT_EQ(r.report.find("REGRESSED"), std::string::npos) << r.report;  // no score compared
  EXPECT_NE(r.report.find("| snapkv 256 | passkey | 0 | – |"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("10 instance(s) missing"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("10 only in new"), std::string::npos) << r.report;

  // A renamed label over the same spec: one configuration, its drop tested
  // (four of ten: mid-p 0.031 < 0.05).
  const RunFolder renamed =
      make_run("renamed", relabelled(ten(passing_but(4)), "SnapKV 25%", "snapkv:budget=256"));
  const CompareResult rr = compare_runs(base.dir(), renamed.dir(), 0.05);
  EXPECT_TRUE(rr.regressed) << rr.report;
  EXPECT_NE(rr.report.find("- 'snapkv 256' is labelled 'SnapKV 25%' in the new run (same spec "
                           "`snapkv:budget=256`): compared as one configuration\n"),
            std::string::npos)
      << rr.report;
  EXPECT_NE(rr.report.find("| snapkv 256 → SnapKV 25% | passkey | 10 | McNemar |"),
            std::string::npos)
      << rr.report;
  EXPECT_NE(rr.report.find("| 0.03125 | 0.400 (4 of 10) | REGRESSED |"), std::string::npos)
      << rr.report;
  EXPECT_NE(rr.report.find("0 missing from new, 0 only in new"), std::string::npos) << rr.report;

  // Unchanged but renamed: no regression.
  const RunFolder same =
      make_run("same", relabelled(ten(passing_but(0)), "SnapKV 25%", "snapkv:budget=256"));
  EXPECT_FALSE(compare_runs(base.dir(), same.dir(), 0.0).regressed);
  for (const auto* f : {&base, &changed, &renamed, &same}) f->remove();
}

// The continuous metrics see what ten unchanged pass/fail scores cannot: h2o
// keeps every score while its KL to the full cache rises on every instance
// (a budget silently halved looks like this). Beyond the metric tolerance
// and significant: a regression, named in the metrics table; within it, or
// lower, not; a metric that improved is said so.
TEST(Compare, AWorseningOfTheContinuousMetricsRegressesWhereScoresCannot) {
  const RunFolder base = make_run("base", ten(passing_but(0)));
  std::vector<json> worse = ten(passing_but(0)), better = ten(passing_but(0));
  for (size_t i = 0; i < worse.size(); ++i) {
    if (worse[i]["policy"]["label"] != "h2o") continue;
    worse[i]["retention"]["kl_full"] = 0.2 + 0.05 + 0.001 * static_cast<double>(i);
    better[i]["retention"]["top1_agreement"] = 0.6;
  }
  const RunFolder w = make_run("worse", worse), b = make_run("better", better);
  const CompareResult r = compare_runs(base.dir(), w.dir(), 0.0, 0.01);
  EXPECT_TRUE(r.regressed) << r.report;
  EXPECT_EQ(h2o_row(r.report).find("REGRESSED"), std::string::npos) << r.report;  // the score held
  EXPECT_NE(r.report.find("| h2o | passkey | KL(full‖policy) | 10 | 0.2000 | 0.2600 | +0.0600 |"),
            std::string::npos)
      << r.report;
  EXPECT_NE(r.report.find("| REGRESSED |\n"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("1 of 2 groups with these metrics changed"), std::string::npos)
      << r.report;
  // The same worsening within a tolerance of 0.1 nats is accepted.
  const CompareResult within = compare_runs(base.dir(), w.dir(), 0.0, 0.1);
  EXPECT_FALSE(within.regressed) << within.report;
  EXPECT_NE(within.report.find("| worse within tolerance |"), std::string::npos) << within.report;
  // Better top-1 agreement is no regression, and unchanged metrics are only counted.
  const CompareResult rb = compare_runs(base.dir(), b.dir(), 0.0, 0.0);
  EXPECT_FALSE(rb.regressed) << rb.report;
  EXPECT_NE(rb.report.find("| top-1 agreement | 10 | 0.5000 | 0.6000 | +0.1000 | 1 | better |"),
            std::string::npos)
      << rb.report;
  const CompareResult same = compare_runs(base.dir(), base.dir(), 0.0, 0.0);
  EXPECT_NE(same.report.find("0 of 2 groups with these metrics changed on some instance.\n"),
            std::string::npos)
      << same.report;
  for (const auto* f : {&base, &w, &b}) f->remove();
}

// `kvbench compare` as a user runs it: exit 0 with "no significant
// regression" and the detectable drop named for one flip of ten (p = 0.25)
// and for three (p = 0.0625), exit 1 for a significant drop beyond the
// tolerance (four of ten, p = 0.031), exit 2 with one error line for bad
// input.
TEST(CompareCli, ExitCodes) {
  const RunFolder base = make_run("base", ten(passing_but(0)));
  const RunFolder one = make_run("one", ten(passing_but(1)));
  const RunFolder three = make_run("three", ten(passing_but(3)));
  const RunFolder four = make_run("four", ten(passing_but(4)));
  const test::CliResult r1 =
      test::run_kvbench("compare " + base.dir() + " " + one.dir() + " --tolerance 0.05");
  EXPECT_EQ(r1.code, 0) << r1.out << r1.err;
  EXPECT_NE(r1.out.find("RESULT: no significant regression"), std::string::npos) << r1.out;
  EXPECT_NE(r1.out.find("| 0.25 | 0.400 (4 of 10) | drop not significant |"), std::string::npos)
      << r1.out;
  EXPECT_NE(r1.out.find("can call no drop below 0.400 significant"), std::string::npos) << r1.out;
  EXPECT_TRUE(r1.err.empty()) << r1.err;
  const test::CliResult r3 =
      test::run_kvbench("compare " + base.dir() + " " + three.dir() + " --tolerance 0.05");
  EXPECT_EQ(r3.code, 0) << r3.out;  // p = 0.0625
  const test::CliResult r4 =
      test::run_kvbench("compare " + base.dir() + " " + four.dir() + " --tolerance 0.05");
  EXPECT_EQ(r4.code, 1) << r4.out;  // p = 0.03125
  EXPECT_NE(r4.out.find("| 0.03125 | 0.400 (4 of 10) | REGRESSED |"), std::string::npos) << r4.out;
  EXPECT_NE(r4.out.find("RESULT: regression"), std::string::npos) << r4.out;
  test::expect_input_error(
      test::run_kvbench("compare " + base.dir() + " " + four.dir() + " --tolerance 2"),
      "--tolerance");
  test::expect_input_error(test::run_kvbench("compare " + base.dir() + " " + base.dir() + "-none"),
                           base.dir() + "-none");
  for (const auto* f : {&base, &one, &three, &four}) f->remove();
}

// `compare --json` on a known comparison (four of ten h2o instances flip:
// one-sided mid-p McNemar p = 1/32, a regression at tolerance 0.05): every
// number of the markdown table is there, with the exit code; nothing but
// ASCII is printed, and a hostile label comes back exactly.
TEST(CompareJson, HoldsTheComparisonAndItsExitCode) {
  const RunFolder base = make_run("base", ten(passing_but(0)));
  const RunFolder four = make_run("four", ten(passing_but(4)));
  const CompareResult r = compare_runs(base.dir(), four.dir(), 0.05);
  const std::string text = compare_json_text(r);
  for (const char c : text)
    ASSERT_TRUE(static_cast<unsigned char>(c) < 0x80 && (c >= 0x20 || c == '\n')) << int(c);
  const json j = json::parse(text);
  EXPECT_EQ(j["schema"], "kvbench-compare/1");
  EXPECT_EQ(j["result"], "regression");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_DOUBLE_EQ(j["tolerance"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(j["metric_tolerance"].get<double>(), 0.01);
  EXPECT_EQ(j["base"]["dir"], base.dir());
  EXPECT_EQ(j["new"]["decoding"], "query-aware, chunk 512, task's answer budget, question last");
  EXPECT_TRUE(j["notes"].empty());
  EXPECT_TRUE(j["configurations"].empty());
  EXPECT_EQ(j["counts"], (json{{"base_cells", 20},
                               {"new_cells", 20},
                               {"missing_from_new", 0},
                               {"only_in_new", 0},
                               {"changed_cells", 4}}));
  ASSERT_EQ(j["groups"].size(), 2u);
  const json& full = j["groups"][0];
  EXPECT_EQ(full["configuration"], "full");
  EXPECT_EQ(full["status"], "ok");
  EXPECT_FALSE(full["regressed"].get<bool>());
  const json& h2o = j["groups"][1];
  EXPECT_TRUE(h2o["model"].is_null());  // one model in each run
  EXPECT_EQ(h2o["configuration"], "h2o");
  EXPECT_EQ(h2o["new_configuration"], "h2o");
  EXPECT_EQ(h2o["spec"], "h2o");
  EXPECT_EQ(h2o["task"], "passkey");
  EXPECT_EQ(h2o["n"], 10);
  EXPECT_EQ(h2o["test"], "McNemar");
  EXPECT_DOUBLE_EQ(h2o["base"]["mean"].get<double>(), 1.0);
  EXPECT_NEAR(h2o["base"]["ci"][0].get<double>(), 0.722, 5e-4);  // as the table: [0.722, 1.000]
  EXPECT_DOUBLE_EQ(h2o["base"]["ci"][1].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(h2o["new"]["mean"].get<double>(), 0.6);
  EXPECT_NEAR(h2o["new"]["ci"][0].get<double>(), 0.313, 5e-4);  // [0.313, 0.832]
  EXPECT_NEAR(h2o["new"]["ci"][1].get<double>(), 0.832, 5e-4);
  EXPECT_NEAR(h2o["delta"].get<double>(), -0.4, 1e-12);
  EXPECT_DOUBLE_EQ(h2o["p"].get<double>(), 0.03125);
  EXPECT_DOUBLE_EQ(h2o["min_detectable_drop"].get<double>(), 0.4);
  EXPECT_EQ(h2o["min_detectable_flips"], 4);
  EXPECT_TRUE(h2o["undetectable"].get<bool>());  // 0.4 > the tolerance 0.05
  EXPECT_EQ(h2o["missing"], 0);
  EXPECT_EQ(h2o["status"], "REGRESSED");
  EXPECT_TRUE(h2o["regressed"].get<bool>());
  ASSERT_EQ(h2o["metrics"].size(), 3u);  // unchanged: said so, p 1
  EXPECT_EQ(h2o["metrics"][1]["metric"], "KL(full\u2016policy)");
  EXPECT_EQ(h2o["metrics"][1]["status"], "unchanged");
  EXPECT_DOUBLE_EQ(h2o["metrics"][1]["base_mean"].get<double>(), 0.2);
  ASSERT_EQ(j["changed_cells"].size(), 4u);
  EXPECT_EQ(j["changed_cells"][0], (json{{"model", nullptr},
                                         {"cell", "passkey-0--h2o"},
                                         {"instance", "passkey-0"},
                                         {"configuration", "h2o"},
                                         {"base", 1.0},
                                         {"new", 0.0},
                                         {"delta", -1.0}}));

  // The command line: the same document, the exit code unchanged; markdown
  // stays the default.
  const test::CliResult cli =
      test::run_kvbench("compare " + base.dir() + " " + four.dir() + " --tolerance 0.05 --json");
  EXPECT_EQ(cli.code, 1) << cli.err;
  EXPECT_EQ(cli.out, text);
  EXPECT_TRUE(cli.err.empty()) << cli.err;
  const test::CliResult ok =
      test::run_kvbench("compare " + base.dir() + " " + base.dir() + " --json");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(json::parse(ok.out)["result"], "no significant regression");
  EXPECT_EQ(json::parse(ok.out)["exit_code"], 0);
  const test::CliResult help = test::run_kvbench("compare --help");
  EXPECT_EQ(help.code, 0);
  for (const char* field : {"--json", "kvbench-compare/1", "min_detectable_drop", "changed_cells"})
    EXPECT_NE(help.out.find(field), std::string::npos) << field << "\n" << help.out;

  // A renamed configuration, another protocol (a decoding note) and a
  // hostile label: raw in the document, which is ASCII all the same.
  const std::string hostile = "\x1b[2J\u202e=cmd|' /C calc'!A0,\"q\"\nx";
  const std::string out = testing::TempDir() + "kvbench-results-" + std::to_string(::getpid());
  RunFolder agnostic =
      RunFolder::create(out, "agnostic", json{{"decoding", {{"protocol", "query_agnostic"}}}},
                        json{{"plan", {{"cells", 20}}}});
  for (json c : relabelled(ten(passing_but(0)), hostile, "h2o:budget=128"))
    agnostic.write_cell(c["id"].get<std::string>(), c);
  const RunFolder spec_base =
      make_run("spec-base", relabelled(ten(passing_but(0)), "h2o 128", "h2o:budget=128"));
  const CompareResult rr = compare_runs(spec_base.dir(), agnostic.dir(), 0.0);
  const std::string rtext = compare_json_text(rr);
  for (const char c : rtext) ASSERT_TRUE(static_cast<unsigned char>(c) < 0x80 && c != 0x1b);
  const json jr = json::parse(rtext);
  ASSERT_EQ(jr["notes"].size(), 1u);
  EXPECT_EQ(jr["notes"][0].get<std::string>().rfind(
                "the runs decode differently (base: query-aware, chunk 512, task's answer budget, "
                "question last; new: query-agnostic, chunk 512",
                0),
            0u)
      << jr["notes"];
  ASSERT_EQ(jr["configurations"].size(), 1u);
  EXPECT_EQ(jr["configurations"][0], (json{{"model", nullptr},
                                           {"label", "h2o 128"},
                                           {"spec", "h2o:budget=128"},
                                           {"match", "renamed"},
                                           {"new_label", hostile},
                                           {"new_spec", "h2o:budget=128"}}));
  EXPECT_EQ(jr["groups"][1]["new_configuration"], hostile);
  EXPECT_EQ(jr["result"], "no significant regression");
  for (const auto* f : {&base, &four, &spec_base}) f->remove();
  agnostic.remove();
}

// Records appended during a long job (dataset calibrate --records) reach the
// file at the path even when it was replaced in between (a git stash or
// checkout of it: a descriptor kept open lost 87 records that way); a link
// or a directory at the path is refused.
TEST(AppendToFile, EachAppendReachesTheFileAtThePath) {
  const std::string d = testing::TempDir() + "kvbench-append-" + std::to_string(::getpid());
  std::filesystem::create_directories(d);
  const std::string path = d + "/records.jsonl";
  auto read = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  append_to_file(path, "{\"a\":1}\n");
  append_to_file(path, "{\"a\":2}\n");
  EXPECT_EQ(read(path), "{\"a\":1}\n{\"a\":2}\n");
  // Replaced by another file (a new inode), as git does.
  write_file_atomic(d + "/other", "{\"a\":1}\n");
  std::filesystem::rename(d + "/other", path);
  append_to_file(path, "{\"a\":3}\n");
  EXPECT_EQ(read(path), "{\"a\":1}\n{\"a\":3}\n");
  std::filesystem::create_symlink(path, d + "/link");
  EXPECT_THROW(append_to_file(d + "/link", "x\n"), InputError);
  EXPECT_THROW(append_to_file(d, "x\n"), InputError);
  EXPECT_EQ(read(path), "{\"a\":1}\n{\"a\":3}\n");
  std::filesystem::remove_all(d);
}

TEST(RunFolder, CellsAreAtomicFilesAndOpenNeedsAConfig) {
  const RunFolder run = make_run("cells", synthetic());
  EXPECT_TRUE(run.has_cell("passkey-0--full"));
  EXPECT_FALSE(run.has_cell("passkey-9--full"));
  // A leftover temporary of an interrupted write is not a cell.
  std::ofstream(run.path("cells/passkey-9--full.json.tmp.123")) << "{";
  EXPECT_EQ(run.cells().size(), 8u);
  EXPECT_THROW(RunFolder::open(testing::TempDir() + "no-such-run"), InputError);
  run.remove();
}

}  // namespace
}  // namespace kvbench
