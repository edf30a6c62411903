// Results plumbing on synthetic cells: the table's relative columns, the
// report files, compare's exit status and merge's checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "harness/report/compare.h"
#include "harness/report/report.h"
#include "harness/report/table.h"
#include "harness/run/run_folder.h"
#include "model/common/error.h"

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
  EXPECT_NE(md.find("| h2o | 25.0% | 1.10x | 75.0% [30.1, 95.4] |"), std::string::npos) << md;
  EXPECT_NE(md.find("| full | 100.0% | 1.00x | 100.0% |"), std::string::npos) << md;
  // The score with its Wilson interval (3 of 4: [0.3006, 0.9544]) and n.
  EXPECT_NE(md.find("| 0.750 [0.301, 0.954] | Wilson, n=4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.000 [0.510, 1.000] | Wilson, n=4 |"), std::string::npos) << md;
  EXPECT_EQ(rows[1].score_kind, stats::ScoreKind::PassFail);
  EXPECT_NEAR(rows[1].score_ci.lo, 0.300642, 1e-6);
  const std::string csv = table_csv(rows);
  EXPECT_NE(csv.find("\"h2o\",\"h2o\",4,0.25,1.1,0.75,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.300642,0.954413,Wilson,0.300642,0.954413\n"), std::string::npos) << csv;
  // Every row of the markdown table has as many cells as its header.
  std::istringstream lines(md);
  std::string line;
  std::vector<long> bars;
  while (std::getline(lines, line)) bars.push_back(std::count(line.begin(), line.end(), '|'));
  for (long b : bars) EXPECT_EQ(b, bars[0]) << md;
  // A fractional row takes the bootstrap.
  auto cells = synthetic();
  cells[3]["score"] = 0.5;
  const auto frac = build_table(cells);
  EXPECT_EQ(frac[1].score_kind, stats::ScoreKind::Fractional);
  EXPECT_NE(table_markdown(frac).find("| bootstrap, n=4 |"), std::string::npos);
  // When the full cache's scores differ between instances, retention's
  // interval is a bootstrap of the ratio of paired sums.
  cells = synthetic();
  cells[0]["score"] = 0.0;  // full fails instance 0, which h2o passes
  const auto varied = build_table(cells);
  EXPECT_DOUBLE_EQ(*varied[1].score_rel, 1.0);  // 3 / 3
  EXPECT_LT(varied[1].score_rel_ci.lo, 1.0);
  EXPECT_GT(varied[1].score_rel_ci.hi, 1.0);
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
  for (const char* f :
       {"table.md", "table.csv", "metrics.json", "predictions.jsonl", "report.md", "report.html"})
    EXPECT_TRUE(fs::exists(run.path(f))) << f;
  if (s.plot_warning.empty()) {
    for (const char* f :
         {"plots/heatmap-h2o.png", "plots/heatmap-h2o.svg", "plots/score-vs-memory.png",
          "plots/score-vs-budget.png", "plots/speed.svg"})
      EXPECT_GT(fs::file_size(run.path(f)), 1000u) << f;
  }
  EXPECT_EQ(read_json_file(run.path("metrics.json"))["cells"], 8);
  run.remove();
}

TEST(Compare, ExitsOnADropBeyondToleranceAndOnMissingCells) {
  const auto base_cells = synthetic();
  const RunFolder base = make_run("base", base_cells);
  const RunFolder same = make_run("same", base_cells);
  EXPECT_FALSE(compare_runs(base.dir(), same.dir(), 0.0).regressed);

  auto worse = base_cells;
  worse[1]["score"] = 0.0;  // h2o on instance 0: 1 -> 0, mean 0.75 -> 0.5
  const RunFolder degraded = make_run("degraded", worse);
  const CompareResult r = compare_runs(base.dir(), degraded.dir(), 0.1);
  EXPECT_TRUE(r.regressed);
  EXPECT_NE(r.report.find("REGRESSED"), std::string::npos) << r.report;
  EXPECT_FALSE(compare_runs(base.dir(), degraded.dir(), 0.3).regressed);

  auto fewer = base_cells;
  fewer.pop_back();
  const RunFolder missing = make_run("missing", fewer);
  EXPECT_TRUE(compare_runs(base.dir(), missing.dir(), 1.0).regressed);
  for (const auto* f : {&base, &same, &degraded, &missing}) f->remove();
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
