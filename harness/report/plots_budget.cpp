#include "harness/report/plots_budget.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "harness/report/curve_stats.h"
#include "harness/report/plot_style.h"
#include "policies/policy_spec.h"

namespace kvbench::plot {
namespace {

using json = nlohmann::json;

// One panel: a model's cells of one budget unit.
struct Panel {
  std::map<size_t, std::map<double, std::vector<double>>> family;  // base -> budget -> scores
};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::optional<CellBudget> cell_budget(const json& cell) {
  const json& p = cell["policy"];
  if (p.value("is_reference", false)) return std::nullopt;
  if (p.contains("budget") && p["budget"].is_number()) {
    const double b = p["budget"].get<double>();
    return CellBudget{p.value("base", std::string("?")), b <= 1, b};
  }
  // A budget written into the spec: the scorer's (its canonical form lists
  // it always, defaults included).
  if (!p.contains("spec") || !p["spec"].is_string()) return std::nullopt;
  try {
    PolicySpec spec = parse_policy_spec(p["spec"].get<std::string>());
    // A scorer that keeps everything (the full cache's) declares no budget.
    if (!spec.scorer.has("budget")) return std::nullopt;
    const Budget b = spec.scorer.get_budget("budget");
    auto& params = spec.scorer.params;
    params.erase(std::remove_if(params.begin(), params.end(),
                                [](const auto& kv) { return kv.first == "budget"; }),
                 params.end());
    return CellBudget{to_string(spec), b.ratio, b.value};
  } catch (const std::exception&) {
    return std::nullopt;  // a spec of another kvbench version, or damaged: not drawn
  }
}

void score_vs_budget(Script& s, const std::vector<PlotModel>& models, const std::string& dir) {
  // Base policies in the config's order (their first configuration's
  // index), so colours follow the table as in the other figures.
  // Each base takes the colour and marker of its first configuration's
  // family (family_styles), the same as in the other figures.
  const std::map<std::string, size_t> style_of = family_styles(models);
  std::vector<std::string> bases;
  std::vector<size_t> styles;
  {
    std::map<std::string, std::pair<int64_t, std::string>> first;  // base -> (index, family)
    for (const PlotModel& m : models)
      for (const json& c : *m.cells)
        if (const std::optional<CellBudget> b = cell_budget(c)) {
          const std::pair<int64_t, std::string> at{
              c["policy"].value("index", int64_t{0}),
              policy_family(c["policy"].value("label", std::string()))};
          const auto [it, fresh] = first.emplace(b->base, at);
          if (!fresh && at.first < it->second.first) it->second = at;
        }
    std::vector<std::pair<size_t, std::string>> by_style;
    for (const auto& [base, at] : first) by_style.push_back({style_of.at(at.second), base});
    std::sort(by_style.begin(), by_style.end());
    for (const auto& [style, base] : by_style) {
      bases.push_back(base);
      styles.push_back(style);
    }
  }
  // [model][unit: 0 tokens, 1 ratio]
  std::vector<std::array<Panel, 2>> panels(models.size());
  std::vector<std::vector<double>> full(models.size());
  std::array<bool, 2> used{false, false};
  double lo = 1e300, hi = 0;  // token budgets
  for (size_t r = 0; r < models.size(); ++r)
    for (const json& c : *models[r].cells) {
      const double score = c["score"].get<double>();
      if (c["policy"].value("is_reference", false)) {
        full[r].push_back(score);
        continue;
      }
      const std::optional<CellBudget> b = cell_budget(c);
      if (!b) continue;
      const auto it = std::find(bases.begin(), bases.end(), b->base);
      panels[r][b->ratio].family[static_cast<size_t>(it - bases.begin())][b->value].push_back(
          score);
      used[b->ratio] = true;
      if (!b->ratio) {
        lo = std::min(lo, b->value);
        hi = std::max(hi, b->value);
      }
    }
  if (bases.empty()) return;
  std::vector<int> units;
  for (int u = 0; u < 2; ++u)
    if (used[u]) units.push_back(u);

  const PanelGrid grid = panel_grid(420, 310, units.size(), models.size(), bases.size());
  // Token axis: log2 over the budgets used, a margin either side.
  const double t0 = lo / 1.5, t1 = hi * 1.5;

  std::ostringstream cmd;
  int block = 0;
  cmd << "set multiplot title 'Score vs budget (bars and band: 95% intervals)'\n"
      << "set yrange [-0.03:1.05]\nset ytics 0.25\nset ylabel 'score' font ',9'\nunset key\n";
  for (size_t r = 0; r < models.size(); ++r)
    for (size_t k = 0; k < units.size(); ++k) {
      const bool ratio = units[k] == 1;
      const double x0 = ratio ? 0 : t0, x1 = ratio ? 1.02 : t1;
      std::string plot;
      if (!full[r].empty()) plot = full_cache_clauses(cmd, block, x0, x1, interval_of(full[r]));
      // Families at one budget side by side (4% apart on the log axis,
      // 0.012 on the ratio axis).
      std::vector<size_t> fam;
      std::vector<double> xs;
      std::vector<Interval3> ys;
      for (const auto& [f, by_budget] : panels[r][units[k]].family)
        for (const auto& [x, scores] : by_budget) {
          fam.push_back(f);
          xs.push_back(x);
          ys.push_back(interval_of(scores));
        }
      dodge(xs, fam, ratio ? 0.012 : 0.04, !ratio);
      const size_t points = xs.size();
      for (size_t i = 0; i < points;) {
        cmd << "$b" << block << " << EOD\n";
        const size_t f = fam[i];
        for (; i < points && fam[i] == f; ++i)
          cmd << num(xs[i]) << " " << ys[i].mean << " " << ys[i].lo << " " << ys[i].hi << "\n";
        cmd << "EOD\n";
        plot += std::string(plot.empty() ? "" : ", ") + "$b" + std::to_string(block++) +
                " using 1:2:3:4 with yerrorlines lw 1.5 ps 1.1 " + family_style(styles[f]) +
                " notitle";
      }
      if (ratio) {
        cmd << "unset logscale x\nset xrange [0:1.02]\nset xtics 0.25\n"
            << "set xlabel 'budget (share of the prompt kept)' font ',9'\n";
      } else {
        // Tics at the budgets used (powers of two or not), up to a dozen.
        std::map<double, int> at;
        for (const auto& model : panels)
          for (const auto& [f, by_budget] : model[0].family)
            for (const auto& [x, scores] : by_budget) at[x] = 1;
        std::string tics;
        const size_t step = (at.size() + 11) / 12;
        size_t i = 0;
        for (const auto& [x, one] : at)
          if (i++ % step == 0)
            tics += (tics.empty() ? "" : ", ") + tic_label(num(x)) + " " + num(x);
        cmd << "set logscale x 2\nset xrange [" << num(t0) << ":" << num(t1) << "]\n"
            << "set xtics (" << tics << ")\n"
            << "set xlabel 'budget (tokens per KV head, log scale)' font ',9'\n";
      }
      const std::string title =
          (models.size() > 1 ? shorten(models[r].label, 40) + " · " : std::string()) +
          (ratio ? "ratio budgets" : "token budgets") + " (" + std::to_string(points) +
          (points == 1 ? " point)" : " points)");
      cmd << grid.place(r, k) << "set title " << label(title) << " font ',10'\nplot "
          << (plot.empty() ? std::string("NaN notitle") : plot) << "\n";
    }
  cmd << grid.legend_and_close(bases, styles);
  s.emit(dir, "score-vs-budget", grid.size(), cmd.str());
}

}  // namespace kvbench::plot
