#include "harness/report/plots_memory.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "harness/report/curve_stats.h"
#include "harness/report/plot_style.h"

namespace kvbench::plot {
namespace {

using json = nlohmann::json;

// A panel: one model's cells of one task (all tasks in column 0 when there
// are several), as the table builds them.
struct Panel {
  std::vector<TableRow> rows;
  size_t instances = 0;
};

Panel make_panel(const std::vector<json>& cells, const std::string& task) {
  std::vector<json> subset;
  std::set<std::string> ids;
  for (const json& c : cells)
    if (task.empty() || c["instance"].value("task", "") == task) {
      subset.push_back(c);
      ids.insert(c["instance"].value("id", ""));
    }
  return {subset.empty() ? std::vector<TableRow>{} : build_table(subset), ids.size()};
}

// The labels of the full cache's cells (policy.is_reference).
std::set<std::string> reference_labels(const std::vector<json>& cells) {
  std::set<std::string> out;
  for (const json& c : cells)
    if (c["policy"].value("is_reference", false)) out.insert(c["policy"].value("label", ""));
  return out;
}

// Log-axis tics inside [lo, hi] (percent): 1-2-5 steps, finer (1, 1.5, 2,
// 3, 5, 7) when the range spans less than about a decade.
std::string log_tics(double lo, double hi) {
  const std::vector<double> steps =
      hi / lo < 12 ? std::vector<double>{1, 1.5, 2, 3, 5, 7} : std::vector<double>{1, 2, 5};
  std::string tics;
  for (double decade = 0.01; decade <= 1000; decade *= 10)
    for (const double m : steps) {
      const double v = m * decade;
      if (v < lo || v > hi) continue;
      char text[24], at[24];
      std::snprintf(text, sizeof text, "%g%%", v);
      std::snprintf(at, sizeof at, "%g", v);
      tics += (tics.empty() ? "" : ", ") + tic_label(text) + " " + at;
    }
  return "set xtics (" + tics + ")\n";
}

}  // namespace

std::vector<std::string> task_order(const std::vector<PlotModel>& models) {
  std::set<std::string> tasks;
  for (const PlotModel& m : models)
    for (const json& c : *m.cells) tasks.insert(c["instance"].value("task", ""));
  return {tasks.begin(), tasks.end()};
}

void score_vs_memory(Script& s, const std::vector<PlotModel>& models, const std::string& dir) {
  const std::vector<std::string> tasks = task_order(models);
  std::vector<std::string> columns;  // "" = all tasks
  if (tasks.size() > 1) columns.push_back("");
  columns.insert(columns.end(), tasks.begin(), tasks.end());

  // [model][column]; families in the order of the first panel's table (the
  // report's), then any other's; the smallest memory of any panel.
  std::vector<std::vector<Panel>> panels(models.size());
  std::vector<std::set<std::string>> full(models.size());
  std::vector<std::string> families;
  double lo = 100;
  for (size_t r = 0; r < models.size(); ++r) {
    full[r] = reference_labels(*models[r].cells);
    for (const std::string& column : columns) {
      panels[r].push_back(make_panel(*models[r].cells, column));
      for (const TableRow& row : panels[r].back().rows) {
        if (!row.memory_rel || full[r].count(row.label)) continue;
        lo = std::min(lo, *row.memory_rel * 100);
        const std::string f = policy_family(row.label);
        if (std::find(families.begin(), families.end(), f) == families.end()) families.push_back(f);
      }
    }
  }
  if (families.empty()) return;
  // One colour and marker per family across the report's figures; the
  // legend in that order.
  const std::map<std::string, size_t> style_of = family_styles(models);
  std::sort(families.begin(), families.end(), [&](const std::string& a, const std::string& b) {
    return style_of.at(a) < style_of.at(b);
  });
  std::vector<size_t> styles;
  for (const std::string& f : families) styles.push_back(style_of.at(f));

  // Log axis over [lo / 1.4, 140]: the full cache at 100 sits inside it.
  const double x0 = std::max(0.01, lo / 1.4), x1 = 140;
  const PanelGrid grid = panel_grid(400, 310, columns.size(), models.size(), families.size());

  std::ostringstream cmd;
  int block = 0;
  cmd << "set multiplot title 'Score vs KV memory (bars and band: 95% intervals)'\n"
      << "set logscale x 10\nset xrange [" << x0 << ":" << x1 << "]\n"
      << log_tics(x0, 100) << "set yrange [-0.03:1.05]\nset ytics 0.25\n"
      << "set xlabel 'KV memory at question time (% of the full cache, log scale)' font ',9'\n"
      << "set ylabel 'score' font ',9'\nunset key\n";
  for (size_t r = 0; r < models.size(); ++r)
    for (size_t k = 0; k < columns.size(); ++k) {
      const Panel& panel = panels[r][k];
      std::string plot;
      // Per point: its family, memory %, score and interval.
      std::vector<size_t> fam;
      std::vector<double> xs;
      std::vector<Interval3> ys;
      for (const TableRow& row : panel.rows) {
        if (!row.memory_rel) continue;
        const Interval3 e{row.score, std::isnan(row.score_ci.lo) ? row.score : row.score_ci.lo,
                          std::isnan(row.score_ci.hi) ? row.score : row.score_ci.hi};
        if (full[r].count(row.label)) {
          plot = full_cache_clauses(cmd, block, x0, x1, e) + plot;
          continue;
        }
        const auto f = std::find(families.begin(), families.end(), policy_family(row.label));
        if (f == families.end()) continue;
        fam.push_back(static_cast<size_t>(f - families.begin()));
        xs.push_back(*row.memory_rel * 100);
        ys.push_back(e);
      }
      // Families at one memory side by side, 4% apart.
      dodge(xs, fam, 0.04, true);
      // family -> (memory %, score, lo, hi) in memory order
      std::map<size_t, std::vector<std::array<double, 4>>> lines;
      for (size_t i = 0; i < xs.size(); ++i)
        lines[fam[i]].push_back({xs[i], ys[i].mean, ys[i].lo, ys[i].hi});
      for (auto& [f, pts] : lines) {
        std::sort(pts.begin(), pts.end());
        cmd << "$b" << block << " << EOD\n";
        for (const auto& p : pts) cmd << p[0] << " " << p[1] << " " << p[2] << " " << p[3] << "\n";
        cmd << "EOD\n";
        plot += std::string(plot.empty() ? "" : ", ") + "$b" + std::to_string(block++) +
                " using 1:2:3:4 with yerrorlines lw 1.5 ps 1.1 " + family_style(styles[f]) +
                " notitle";
      }
      const std::string title =
          (models.size() > 1 ? shorten(models[r].label, 40) + " · " : std::string()) +
          (columns[k].empty() ? std::string("All tasks") : shorten(columns[k], 30)) + " (" +
          std::to_string(panel.instances) + (panel.instances == 1 ? " instance)" : " instances)");
      cmd << grid.place(r, k) << "set title " << label(title) << " font ',10'\nplot "
          << (plot.empty() ? std::string("NaN notitle") : plot) << "\n";
    }
  cmd << grid.legend_and_close(families, styles);
  s.emit(dir, "score-vs-memory", grid.size(), cmd.str());
}

}  // namespace kvbench::plot
