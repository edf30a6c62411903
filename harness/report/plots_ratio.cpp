#include "harness/report/plots_ratio.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>

#include "harness/report/plot_style.h"

namespace kvbench::plot {
namespace {

using json = nlohmann::json;

const std::vector<std::string>& group_order() {
  static const std::vector<std::string> k{"Retrieval", "Multi-hop tracing", "Aggregation", "QA"};
  return k;
}

// One panel: a model's cells of one task group.
struct Panel {
  std::map<size_t, std::map<double, std::vector<double>>> family;  // family -> ratio -> scores
  std::vector<double> full;                                        // the full cache's scores
  std::set<std::string> instances;
};

// The most task-group columns, and the most length columns, a figure draws.
constexpr size_t kMaxColumnsPerKind = 8;

// One column of panels: the cells of a task group, of a context length, or
// all of them (empty group, length 0).
struct Column {
  std::string title;  // a group's name, or "4k tokens"
  std::string group;
  int64_t length = 0;
  bool holds(const std::string& g, int64_t n) const {
    return (group.empty() || group == g) && (length == 0 || length == n);
  }
};

}  // namespace

std::string task_group(const std::string& task) {
  if (task == "passkey" || task.rfind("niah", 0) == 0) return "Retrieval";
  if (task == "vt") return "Multi-hop tracing";
  if (task == "cwe" || task == "fwe") return "Aggregation";
  if (task == "qa") return "QA";
  return task;
}

namespace {

// The families ranked by their AUC (curve_stats.h), averaged over the models
// that have one; families without an AUC (one ratio) after them, in order.
std::vector<std::string> ranked_families(const std::vector<PlotModel>& models,
                                         const std::vector<std::string>& families) {
  std::map<std::string, std::pair<double, int>> sum;  // family -> (sum of AUCs, models)
  for (const PlotModel& m : models)
    for (const CurveFamily& f : curve_families(*m.cells)) {
      sum[f.family].first += f.auc;
      ++sum[f.family].second;
    }
  const auto auc = [&](const std::string& f) {
    const auto it = sum.find(f);
    return it == sum.end() ? -1.0 : it->second.first / it->second.second;
  };
  std::vector<std::string> out = families;
  std::stable_sort(out.begin(), out.end(),
                   [&](const auto& a, const auto& b) { return auc(a) > auc(b); });
  return out;
}

// One figure of `shown` (a subset of `families`, the legend's order); with
// `dodge`, the families' points are spread sideways around each ratio by
// that much per family, so their bars do not cover each other. The title is
// one line, or two when `subtitle` is set (a figure of one column is 700
// pixels wide: one long line would run off both edges).
void draw(Script& s, const std::vector<PlotModel>& models, const std::string& dir,
          const std::string& stem, const std::string& title, const std::string& subtitle,
          const std::vector<std::string>& shown, const std::map<std::string, size_t>& style_of,
          double dodge) {
  std::map<std::string, size_t> family_of;
  for (size_t j = 0; j < shown.size(); ++j) family_of[shown[j]] = j;

  // Columns: all tasks, then each group present, in RULER's order then by
  // name; then, when the cells hold several context lengths (the needle
  // grid's 4k and 8k), each length over all tasks.
  std::set<std::string> present;
  std::set<int64_t> lengths;
  for (const PlotModel& m : models)
    for (const json& c : *m.cells) {
      present.insert(task_group(c["instance"].value("task", "")));
      // A cell without a length (0) joins no length column.
      if (const int64_t n = c["instance"].value("length", int64_t{0}); n > 0) lengths.insert(n);
    }
  std::vector<Column> columns{{"All tasks", "", 0}};
  for (const auto& g : group_order())
    if (present.count(g)) columns.push_back({g, g, 0});
  for (const auto& g : present)
    if (std::find(group_order().begin(), group_order().end(), g) == group_order().end())
      columns.push_back({g, g, 0});
  // One group is the same as all tasks; more than kMaxColumnsPerKind (a
  // shared folder naming tasks or lengths by the thousand) would make a
  // figure too wide to draw: all tasks only.
  if (columns.size() == 2 || columns.size() > kMaxColumnsPerKind + 1) columns.resize(1);
  if (lengths.size() > 1 && lengths.size() <= kMaxColumnsPerKind)
    for (const int64_t n : lengths) columns.push_back({length_label(n) + " tokens", "", n});

  // [model][column]
  std::vector<std::vector<Panel>> panels(models.size(), std::vector<Panel>(columns.size()));
  for (size_t r = 0; r < models.size(); ++r)
    for (const json& c : *models[r].cells) {
      const bool reference = c["policy"].value("is_reference", false);
      const std::optional<RatioPoint> point = ratio_point(c);
      if (!reference && (!point || !family_of.count(point->family))) continue;
      const std::string group = task_group(c["instance"].value("task", ""));
      const int64_t length = c["instance"].value("length", int64_t{0});
      const double score = c["score"].get<double>();
      for (size_t k = 0; k < columns.size(); ++k) {
        if (!columns[k].holds(group, length)) continue;
        Panel& panel = panels[r][k];
        if (reference)
          panel.full.push_back(score);
        else
          panel.family[family_of.at(point->family)][point->ratio].push_back(score);
        panel.instances.insert(c["instance"].value("id", ""));
      }
    }

  // Pixels: panels of 420 x 320, a legend column as tall as its entries
  // need (about 15 pixels each at its font), a title line.
  PanelGrid grid = panel_grid(420, 320, columns.size(), models.size(), shown.size());
  std::ostringstream cmd;
  int block = 0;
  cmd << "set multiplot title " << label(title);
  if (!subtitle.empty()) {
    // gnuplot's "\n" joins the two literals; the panels move down a line.
    cmd << " . \"\\n\" . " << label(subtitle);
    grid.top += 18;
    grid.height += 18;
  }
  cmd << "\n"
      << "set xrange [-0.02:1.02]\nset yrange [0:1.05]\nset xtics 0.25\nset ytics 0.25\n"
      << "set xlabel 'compression ratio (share of the context evicted)' font ',9'\n"
      << "set ylabel 'score' font ',9'\nunset key\n";
  for (size_t r = 0; r < models.size(); ++r)
    for (size_t k = 0; k < columns.size(); ++k) {
      const Panel& panel = panels[r][k];
      std::string plot = "plot ";
      bool any = false;
      if (!panel.full.empty()) {
        plot += full_cache_clauses(cmd, block, -0.02, 1.02, interval_of(panel.full));
        any = true;
      }
      for (const auto& [f, by_ratio] : panel.family) {
        const double shift = dodge * (static_cast<double>(f) - (shown.size() - 1) / 2.0);
        cmd << "$b" << block << " << EOD\n";
        for (const auto& [x, scores] : by_ratio) {
          const Interval3 e = interval_of(scores);
          cmd << x + shift << " " << e.mean << " " << e.lo << " " << e.hi << "\n";
        }
        cmd << "EOD\n";
        plot += std::string(any ? ", " : "") + "$b" + std::to_string(block) +
                " using 1:2:3:4 with yerrorlines lw 1.5 ps 0.9 " +
                family_style(style_of.at(shown[f])) + " notitle";
        ++block;
        any = true;
      }
      const std::string panel_title =
          (models.size() > 1 ? shorten(models[r].label, 30) + " · " : std::string()) +
          columns[k].title + " (" + std::to_string(panel.instances.size()) +
          (panel.instances.size() == 1 ? " instance)" : " instances)");
      cmd << grid.place(r, k) << "set title " << label(panel_title) << " font ',10'\n"
          << (any ? plot : std::string("plot NaN notitle")) << "\n";
    }
  // The legend: an empty panel whose series are the full cache and the families.
  std::vector<size_t> styles;
  for (const std::string& f : shown) styles.push_back(style_of.at(f));
  cmd << grid.legend_and_close(shown, styles);
  s.emit(dir, stem, grid.size(), cmd.str());
}

}  // namespace

void score_vs_ratio(Script& s, const std::vector<PlotModel>& models, const std::string& dir) {
  std::vector<const std::vector<json>*> runs;
  for (const PlotModel& m : models) runs.push_back(m.cells);
  const std::vector<std::string> families = ratio_families(runs);
  if (families.empty()) return;
  // One colour and marker per family across the report's figures.
  const std::map<std::string, size_t> style_of = family_styles(models);
  const std::string base = "Score vs compression ratio (bars and band: 95% intervals)";
  if (families.size() <= kRatioFigureTop) {
    draw(s, models, dir, "score-vs-ratio", base, "", families, style_of, 0.008);
    return;
  }
  // Two dozen lines with their bars cannot be read on one panel: the
  // figure draws the leaders, a second one every family.
  std::vector<std::string> top = ranked_families(models, families);
  top.resize(kRatioFigureTop);
  draw(s, models, dir, "score-vs-ratio",
       "Score vs compression ratio: the " + std::to_string(kRatioFigureTop) + " of " +
           std::to_string(families.size()) + " families with the highest AUC",
       "(every family: score-vs-ratio-all; bars and band: 95% intervals)", top, style_of, 0.008);
  draw(s, models, dir, "score-vs-ratio-all", base, "", families, style_of, 0.0);
}

}  // namespace kvbench::plot
