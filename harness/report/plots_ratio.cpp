#include "harness/report/plots_ratio.h"

#include <algorithm>
#include <cmath>
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

}  // namespace

std::string task_group(const std::string& task) {
  if (task == "passkey" || task.rfind("niah", 0) == 0) return "Retrieval";
  if (task == "vt") return "Multi-hop tracing";
  if (task == "cwe" || task == "fwe") return "Aggregation";
  if (task == "qa") return "QA";
  return task;
}

void score_vs_ratio(Script& s, const std::vector<PlotModel>& models, const std::string& dir) {
  std::vector<const std::vector<json>*> runs;
  for (const PlotModel& m : models) runs.push_back(m.cells);
  const std::vector<std::string> families = ratio_families(runs);
  if (families.empty()) return;
  // One colour and marker per family across the report's figures.
  const std::map<std::string, size_t> style_of = family_styles(models);
  std::map<std::string, size_t> family_of;
  for (size_t j = 0; j < families.size(); ++j) family_of[families[j]] = j;

  // Columns: all tasks, then each group present, in RULER's order then by name.
  std::set<std::string> present;
  for (const PlotModel& m : models)
    for (const json& c : *m.cells) present.insert(task_group(c["instance"].value("task", "")));
  std::vector<std::string> columns{"All tasks"};
  for (const auto& g : group_order())
    if (present.count(g)) columns.push_back(g);
  for (const auto& g : present)
    if (std::find(group_order().begin(), group_order().end(), g) == group_order().end())
      columns.push_back(g);
  if (columns.size() == 2) columns.pop_back();  // one group: the same as all tasks

  // [model][column]
  std::vector<std::vector<Panel>> panels(models.size(), std::vector<Panel>(columns.size()));
  for (size_t r = 0; r < models.size(); ++r)
    for (const json& c : *models[r].cells) {
      const bool reference = c["policy"].value("is_reference", false);
      const std::optional<RatioPoint> point = ratio_point(c);
      const std::string group = task_group(c["instance"].value("task", ""));
      const double score = c["score"].get<double>();
      for (size_t k = 0; k < columns.size(); ++k) {
        if (k > 0 && columns[k] != group) continue;
        Panel& panel = panels[r][k];
        if (reference) {
          panel.full.push_back(score);
        } else if (point) {
          panel.family[family_of.at(point->family)][point->ratio].push_back(score);
        } else {
          continue;
        }
        panel.instances.insert(c["instance"].value("id", ""));
      }
    }

  // Pixels: panels of 420 x 320, a legend column as tall as its entries
  // need (about 15 pixels each at its font), a title line.
  const PanelGrid grid = panel_grid(420, 320, columns.size(), models.size(), families.size());
  std::ostringstream cmd;
  int block = 0;
  cmd << "set multiplot title 'Score vs compression ratio (bars and band: 95% intervals)'\n"
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
        cmd << "$b" << block << " << EOD\n";
        for (const auto& [x, scores] : by_ratio) {
          const Interval3 e = interval_of(scores);
          cmd << x << " " << e.mean << " " << e.lo << " " << e.hi << "\n";
        }
        cmd << "EOD\n";
        plot += std::string(any ? ", " : "") + "$b" + std::to_string(block) +
                " using 1:2:3:4 with yerrorlines lw 1.5 ps 0.9 " +
                family_style(style_of.at(families[f])) + " notitle";
        ++block;
        any = true;
      }
      const std::string title =
          (models.size() > 1 ? shorten(models[r].label, 30) + " · " : std::string()) + columns[k] +
          " (" + std::to_string(panel.instances.size()) +
          (panel.instances.size() == 1 ? " instance)" : " instances)");
      cmd << grid.place(r, k) << "set title " << label(title) << " font ',10'\n"
          << (any ? plot : std::string("plot NaN notitle")) << "\n";
    }
  // The legend: an empty panel whose series are the full cache and the families.
  std::vector<size_t> styles;
  for (const std::string& f : families) styles.push_back(style_of.at(f));
  cmd << grid.legend_and_close(families, styles);
  s.emit(dir, "score-vs-ratio", grid.size(), cmd.str());
}

}  // namespace kvbench::plot
