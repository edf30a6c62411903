// The report's figures as gnuplot scripts: their structure (panels per task
// and model, log memory axis, heatmaps per task with k/n on viridis, budget
// units apart, layer kinds marked), asserted on the script text; gnuplot
// itself runs in test_harness_results and the hostile suite.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "harness/report/layer_kinds.h"
#include "harness/report/plot_style.h"
#include "harness/report/plots.h"
#include "harness/report/plots_budget.h"
#include "harness/report/plots_memory.h"
#include "harness/report/plots_needles.h"
#include "harness/report/plots_ratio.h"
#include "harness/report/table.h"
#include "tests/support/reference_gemma3.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

json cell(const std::string& task, int i, const std::string& label, const std::string& spec,
          double score, double bytes, json budget = nullptr, double depth = 0.5,
          int64_t length = 1024) {
  const std::string inst = task + "-" + std::to_string(i);
  const bool full = label == "full";
  return {{"id", inst + "--" + label},
          {"instance", {{"id", inst}, {"task", task}, {"length", length}, {"depth", depth}}},
          {"policy",
           {{"label", label},
            {"spec", spec},
            {"is_reference", full},
            {"base", full ? "full" : spec},
            {"budget", budget}}},
          {"score", score},
          {"memory", {{"kv_bytes_hot", bytes}, {"kv_bytes_cold", 0.0}}},
          {"timing", {{"decode_tok_s", 10.0}, {"prefill_tok_s", 100.0}}}};
}

// Two tasks, four instances each: the full cache, h2o at two token budgets
// (one family), snapkv at 256 (another; the same memory as h2o's 256).
std::vector<json> two_tasks(double snapkv_score = 1.0) {
  std::vector<json> cells;
  for (const char* task : {"passkey", "niah_single"})
    for (int i = 0; i < 4; ++i) {
      cells.push_back(cell(task, i, "full", "full", 1.0, 4000));
      json a = cell(task, i, "h2o (budget 128)", "h2o:budget=128", i % 2, 500, 128);
      a["policy"]["base"] = "h2o";
      json b = cell(task, i, "h2o (budget 256)", "h2o:budget=256", 1.0, 1000, 256);
      b["policy"]["base"] = "h2o";
      cells.push_back(a);
      cells.push_back(b);
      cells.push_back(cell(task, i, "snapkv 256", "snapkv:budget=256", snapkv_score, 1000));
    }
  return cells;
}

TEST(Plots, ScoreVsMemoryFacetsByTaskAndModelOnALogAxis) {
  const std::vector<json> a = two_tasks(), b = two_tasks(0.0);
  const std::vector<TableRow> ra = build_table(a), rb = build_table(b);
  plot::Script s;
  plot::score_vs_memory(s, {{"model A", &a, &ra, {}}, {"model B", &b, &rb, {}}}, "/tmp/x");
  const std::string script = s.body.str();
  EXPECT_EQ(s.files,
            (std::vector<std::string>{"plots/score-vs-memory.png", "plots/score-vs-memory.svg"}));
  // 2 models x (all tasks + 2 tasks) panels and the legend, per output.
  EXPECT_EQ(count(script, "set origin"), 2u * (2 * 3 + 1));
  for (const char* title :
       {"'model A · All tasks (8 instances)'", "'model A · passkey (4 instances)'",
        "'model B · niah\\_single (4 instances)'"})
    EXPECT_NE(script.find(title), std::string::npos) << title;
  EXPECT_NE(script.find("set logscale x 10"), std::string::npos);
  // 12.5% and 25% of the full cache: the axis from 12.5 / 1.4 to 140%, less
  // than a decade to 100%, so tics in finer steps than 1-2-5.
  EXPECT_NE(script.find("set xtics ('10%%' 10, '15%%' 15, '20%%' 20, '30%%' 30, '50%%' 50, "
                        "'70%%' 70, '100%%' 100)"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find(":140]"), std::string::npos);
  // Families (h2o's two budgets one line) by Okabe-Ito colour and marker,
  // named in the legend, never on the points; the full cache dashed with
  // its band; no Pareto front.
  EXPECT_NE(script.find("title 'h2o'"), std::string::npos);
  EXPECT_NE(script.find("title 'snapkv 256'"), std::string::npos);
  EXPECT_NE(script.find(plot::family_style(0)), std::string::npos);
  EXPECT_NE(script.find(plot::family_style(1)), std::string::npos);
  EXPECT_EQ(script.find("with labels"), std::string::npos);
  EXPECT_EQ(script.find("Pareto"), std::string::npos);
  EXPECT_EQ(count(script, "with lines dt 2 lw 2 lc rgb '#000000' notitle"), 2u * 6);
  EXPECT_EQ(count(script, "filledcurves"), 2u * 6);
  // h2o's line in the all-tasks panel: memory 12.5% then 25%, in order.
  EXPECT_NE(script.find("EOD\n$b1 << EOD\n12.5 0.5 "), std::string::npos) << script;
}

TEST(Plots, FamilyStylesDifferInColourAndMarker) {
  std::set<std::string> styles;
  std::set<std::string> markers;
  for (size_t j = 0; j < 70; ++j) styles.insert(plot::family_style(j));
  for (size_t j = 0; j < 7; ++j) {
    const std::string st = plot::family_style(j);
    markers.insert(st.substr(st.find(" pt ")));
  }
  EXPECT_EQ(styles.size(), 70u);
  EXPECT_EQ(markers.size(), 7u);  // the first seven differ in marker as well as colour
  EXPECT_EQ(plot::family_colour(0), std::string("#E69F00"));
}

TEST(Plots, NeedleHeatmapsOnePerTaskWithCountsOnViridis) {
  std::vector<json> cells = two_tasks();
  // A second depth on passkey only: the niah_single figure has one row.
  cells.push_back(cell("passkey", 9, "full", "full", 1.0, 4000, nullptr, 0.25));
  const std::vector<TableRow> rows = build_table(cells);
  plot::Script s;
  plot::needle_heatmaps(s, cells, rows, "/tmp/x");
  EXPECT_EQ(s.files,
            (std::vector<std::string>{"plots/heatmaps-task1.png", "plots/heatmaps-task1.svg",
                                      "plots/heatmaps-task2.png", "plots/heatmaps-task2.svg"}));
  const std::string script = s.body.str();
  // Tasks by name: niah_single is task 1, passkey task 2.
  const size_t second = script.find("heatmaps-task2.png");
  ASSERT_NE(second, std::string::npos);
  const std::string niah = script.substr(0, second), passkey = script.substr(second);
  EXPECT_NE(niah.find("'niah\\_single (4 instances): mean score"), std::string::npos) << niah;
  EXPECT_EQ(niah.find("passkey"), std::string::npos);
  EXPECT_NE(passkey.find("'passkey (5 instances): mean score"), std::string::npos);
  EXPECT_EQ(passkey.find("niah"), std::string::npos);
  // Viridis, not red to green.
  EXPECT_NE(script.find("0 '#440154'"), std::string::npos);
  EXPECT_NE(script.find("1 '#FDE725'"), std::string::npos);
  EXPECT_EQ(script.find("#d7191c"), std::string::npos);
  // k/n in each box, in a colour that reads on it. h2o 128 passes instances
  // 1 and 3 of four at length 1024, depth 50%: 2/4, mean 0.5 (dark: white).
  EXPECT_NE(script.find("sprintf('%d/%d', $4, $5)"), std::string::npos);
  EXPECT_NE(script.find("tc rgb variable"), std::string::npos);
  EXPECT_NE(niah.find("$h1 << EOD\n0 0 0.5 2 4 1 16777215\nEOD"), std::string::npos) << niah;
  // Full at 25% and 50% depth on passkey: two rows, one instance and four.
  EXPECT_NE(passkey.find("$h0 << EOD\n0 0 1 1 1 1 0\n0 1 1 4 4 1 0\nEOD"), std::string::npos)
      << passkey;
}

TEST(Plots, FigureSvgsFindsPerTaskParts) {
  const std::vector<std::string> files = {"plots/heatmaps-task1.svg", "plots/heatmaps-task2.svg",
                                          "plots/heatmaps-1-task1.svg", "plots/speed.svg"};
  EXPECT_EQ(figure_svgs(files, "heatmaps"),
            (std::vector<std::string>{"plots/heatmaps-task1.svg", "plots/heatmaps-task2.svg"}));
  EXPECT_EQ(figure_svgs(files, "heatmaps-1"),
            (std::vector<std::string>{"plots/heatmaps-1-task1.svg"}));
  EXPECT_EQ(figure_svgs(files, "speed"), (std::vector<std::string>{"plots/speed.svg"}));
  EXPECT_TRUE(figure_svgs(files, "needle-layers").empty());
}

TEST(Plots, ScoreVsBudgetTokensAndRatiosApart) {
  std::vector<json> cells = two_tasks();
  for (int i = 0; i < 4; ++i) {
    json r = cell("passkey", i, "h2o (budget 0.5)", "h2o:budget=0.5", 1.0, 2000, 0.5);
    r["policy"]["base"] = "h2o";
    cells.push_back(r);
  }
  // A budget in the spec: read back, its base the spec without it.
  const auto b = plot::cell_budget(cells[3]);  // snapkv 256
  ASSERT_TRUE(b);
  EXPECT_EQ(b->base, "snapkv");
  EXPECT_FALSE(b->ratio);
  EXPECT_EQ(b->value, 256);
  EXPECT_FALSE(plot::cell_budget(cells[0]));  // the full cache
  json quantized = cell("passkey", 0, "int8", "full+int8", 1.0, 1000);
  EXPECT_FALSE(plot::cell_budget(quantized));
  const auto r = plot::cell_budget(cells.back());
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ratio);

  const std::vector<TableRow> rows = build_table(cells);
  plot::Script s;
  plot::score_vs_budget(s, {{"", &cells, &rows, {}}}, "/tmp/x");
  const std::string script = s.body.str();
  // Two panels (tokens, ratios) and the legend, per output.
  EXPECT_EQ(count(script, "set origin"), 2u * 3);
  EXPECT_NE(script.find("'token budgets (3 points)'"), std::string::npos) << script;
  EXPECT_NE(script.find("'ratio budgets (1 point)'"), std::string::npos);
  EXPECT_NE(script.find("set logscale x 2"), std::string::npos);
  EXPECT_NE(script.find("set xtics ('128' 128, '256' 256)"), std::string::npos);
  EXPECT_NE(script.find("'budget (share of the prompt kept)'"), std::string::npos);
  EXPECT_NE(script.find("title 'h2o'"), std::string::npos);
  EXPECT_NE(script.find("title 'snapkv'"), std::string::npos);
  EXPECT_EQ(count(script, "with lines dt 2 lw 2 lc rgb '#000000' notitle"), 2u * 2);
}

// The needle grid: one task group at two lengths. Its columns are all tasks
// (the one group is the same), then 4k and 8k tokens; a run of one length
// gets no length columns.
TEST(Plots, ScoreVsRatioAddsAColumnPerContextLength) {
  const auto grid = [](std::vector<int64_t> lengths) {
    std::vector<json> cells;
    int i = 0;
    for (const int64_t n : lengths)
      for (int k = 0; k < 3; ++k, ++i) {
        cells.push_back(cell("passkey", i, "full", "full", 1.0, 4000, nullptr, 0.5, n));
        for (const double b : {0.5, 0.25}) {
          json c =
              cell("passkey", i, "H2O (budget " + std::to_string(b) + ")",
                   "h2o:budget=" + std::to_string(b), n == 8000 ? 0.0 : 1.0, 4000 * b, b, 0.5, n);
          c["policy"]["base"] = "h2o";
          cells.push_back(c);
        }
      }
    return cells;
  };
  const std::vector<json> two = grid({4096, 8000}), one = grid({4096});
  const std::vector<TableRow> rows_two = build_table(two), rows_one = build_table(one);
  plot::Script a, b;
  plot::score_vs_ratio(a, {{"", &two, &rows_two, {}}}, "/tmp/x");
  plot::score_vs_ratio(b, {{"", &one, &rows_one, {}}}, "/tmp/x");
  const std::string sa = a.body.str(), sb = b.body.str();
  // Three panels and the legend per output (PNG, SVG).
  EXPECT_EQ(count(sa, "set origin"), 2u * 4) << sa;
  EXPECT_NE(sa.find("set title 'All tasks (6 instances)'"), std::string::npos) << sa;
  EXPECT_NE(sa.find("set title '4k tokens (3 instances)'"), std::string::npos) << sa;
  EXPECT_NE(sa.find("set title '8k tokens (3 instances)'"), std::string::npos) << sa;
  EXPECT_EQ(count(sb, "set origin"), 2u * 2) << sb;
  EXPECT_EQ(sb.find("tokens ("), std::string::npos) << sb;
  // Cells without a length join no length column (and make none).
  std::vector<json> unknown = grid({4096});
  for (json& c : grid({8000})) {
    c["instance"].erase("length");
    c["id"] = "x" + c["id"].get<std::string>();
    c["instance"]["id"] = "x" + c["instance"]["id"].get<std::string>();
    unknown.push_back(c);
  }
  const std::vector<TableRow> rows_u = build_table(unknown);
  plot::Script u;
  plot::score_vs_ratio(u, {{"", &unknown, &rows_u, {}}}, "/tmp/x");
  EXPECT_EQ(count(u.body.str(), "set origin"), 2u * 2) << u.body.str();
  // Nine lengths (a hostile folder could name thousands): no length columns.
  const std::vector<json> many = grid({1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000});
  const std::vector<TableRow> rows_m = build_table(many);
  plot::Script m;
  plot::score_vs_ratio(m, {{"", &many, &rows_m, {}}}, "/tmp/x");
  EXPECT_EQ(count(m.body.str(), "set origin"), 2u * 2);
}

TEST(Plots, NeedleLayersMarkLocalAndGlobalLayers) {
  std::vector<json> cells;
  for (const char* label : {"full", "h2o"}) {
    json c = cell("passkey", 0, label, label, 1.0, 1000);
    c["needle_survival"] = {{"per_layer", {1.0, 0.5, 0.25}},
                            {"attended", {{"per_layer", {1.0, 0.5, 0.0}}}}};
    cells.push_back(c);
  }
  const std::vector<TableRow> rows = build_table(cells);
  plot::Script marked, plain, mismatched;
  plot::needle_layers(marked, cells, rows, "/tmp/x", {true, true, false});
  plot::needle_layers(plain, cells, rows, "/tmp/x");
  plot::needle_layers(mismatched, cells, rows, "/tmp/x", {true, false});
  const std::string script = marked.body.str();
  // Layers 0 and 1 local (0), layer 2 global (1).
  EXPECT_NE(script.find("$kind << EOD\n0 0\n1 0\n2 1\nEOD"), std::string::npos) << script;
  EXPECT_NE(script.find("'layer kind' -1.25"), std::string::npos);
  EXPECT_NE(script.find("title 'global layer (attends the whole context)'"), std::string::npos);
  EXPECT_NE(script.find("title 'local layer (sliding window)'"), std::string::npos);
  EXPECT_NE(script.find("0 '#440154'"), std::string::npos);
  for (const plot::Script* s : {&plain, &mismatched}) {
    EXPECT_EQ(s->body.str().find("$kind"), std::string::npos);
    EXPECT_EQ(s->body.str().find("layer kind"), std::string::npos);
  }
}

// A family keeps its colour and marker in every figure: styles follow the
// config's order (policy.index) over every configuration, so the budget
// figure, which has no int8, draws h2o as the memory figure does.
TEST(Plots, OneStylePerFamilyAcrossFigures) {
  std::vector<json> cells;
  for (int i = 0; i < 2; ++i) {
    cells.push_back(cell("passkey", i, "full", "full", 1.0, 4000));
    for (const auto& [index, label, spec, budget] :
         {std::tuple{3, "h2o (budget 128)", "h2o:budget=128", 128},
          std::tuple{1, "int8", "full+int8", 0}, std::tuple{2, "window", "window:budget=64", 0}}) {
      json c = cell("passkey", i, label, spec, 1.0, 1000, budget ? json(budget) : json(nullptr));
      c["policy"]["index"] = index;
      if (budget) c["policy"]["base"] = "h2o";
      cells.push_back(c);
    }
  }
  const std::vector<TableRow> rows = build_table(cells);
  const std::vector<PlotModel> models = {{"", &cells, &rows, {}}};
  const std::map<std::string, size_t> styles = plot::family_styles(models);
  EXPECT_EQ(styles, (std::map<std::string, size_t>{{"int8", 0}, {"window", 1}, {"h2o", 2}}));
  plot::Script memory, budget;
  plot::score_vs_memory(memory, models, "/tmp/x");
  plot::score_vs_budget(budget, models, "/tmp/x");
  for (const plot::Script* s : {&memory, &budget})
    EXPECT_NE(s->body.str().find(plot::family_style(2) + " title 'h2o'"), std::string::npos)
        << s->body.str();
  // window's budget is in its spec: its line in the budget figure too.
  EXPECT_NE(budget.body.str().find(plot::family_style(1) + " title 'window'"), std::string::npos);
  EXPECT_EQ(budget.body.str().find("int8"), std::string::npos);
}

// The kinds come from the GGUF header of the file config.json names for the
// model: the tiny Gemma 3 has local layers 0 and 1 and global layer 2 of
// three; a LLaMA file has none; a missing file marks nothing.
TEST(Plots, LayerKindsFromTheModelFile) {
  const std::string gemma = test::tiny_gemma3_path(), llama = test::tiny_model_path();
  EXPECT_EQ(local_layers_of(json{{"model", gemma}}, "any"), (std::vector<bool>{true, true, false}));
  const json two = {
      {"models", {{{"path", llama}, {"label", "L"}}, {{"path", gemma}, {"label", "G"}}}}};
  EXPECT_EQ(local_layers_of(two, "G"), (std::vector<bool>{true, true, false}));
  EXPECT_TRUE(local_layers_of(two, "L").empty());
  EXPECT_TRUE(local_layers_of(two, "other").empty());
  EXPECT_TRUE(local_layers_of(json{{"model", "/nonexistent/m.gguf"}}, "m").empty());
  EXPECT_TRUE(local_layers_of(json::object(), "m").empty());
}

}  // namespace
}  // namespace kvbench
