#include "harness/report/plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "harness/encode/gnuplot.h"
#include "harness/report/plot_files.h"
#include "harness/report/plot_script.h"
#include "harness/report/plots_needles.h"
#include "harness/report/plots_ratio.h"
#include "harness/report/stats.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

using plot::label;
using plot::label_array;

}  // namespace

namespace {

// A point's label (or the point's own marker) as a box in plot units.
struct Box {
  double x0, x1, y;
};

// The height of a label over [x0, x1) of the point at `score`: the first of
// 0, +1, -1, +2, -2, ... lines from it that overlaps no box in `placed` and
// stays in the plot, else `score`. The label's box joins `placed`.
double place_label(std::vector<Box>& placed, double x0, double x1, double score, double line_h) {
  double y = score;
  for (int step = 0; step < 40; ++step) {
    const double cand = score + line_h * ((step + 1) / 2) * (step % 2 ? 1 : -1);
    const bool free = std::none_of(placed.begin(), placed.end(), [&](const Box& b) {
      return x0 < b.x1 && b.x0 < x1 && std::abs(b.y - cand) < line_h;
    });
    if (free && cand >= -0.02 && cand <= 1.07) {
      y = cand;
      break;
    }
  }
  placed.push_back({x0, x1, y});
  return y;
}

// Score vs memory with the Pareto front (higher score at lower memory), one model.
void score_vs_memory(plot::Script& s, const std::vector<TableRow>& rows, const std::string& dir) {
  std::vector<std::pair<double, double>> pts;  // (memory %, score)
  std::vector<std::string> names;
  std::vector<const TableRow*> shown;
  double max_memory = 0;
  for (const auto& r : rows)
    if (r.memory_rel) {
      shown.push_back(&r);
      max_memory = std::max(max_memory, *r.memory_rel * 100);
    }
  const double x_max = std::max(1.0, max_memory * 1.15);
  // Labels sit right of their point, clear of its error bar, each in the
  // first free slot at, above or below its score (greedy, in table
  // order), so labels of nearby points do not overprint them or each other. A label's box in
  // plot units: about 5.5 pixels a character of the 8-point font over a
  // plot area of about 1060 x 600 pixels.
  const double char_w = x_max * 5.5 / 1060, line_h = 1.05 * 13 / 600;
  // The points themselves are obstacles too (their markers are about two
  // characters wide; a label starts one character right of its own).
  std::vector<Box> placed;
  for (const TableRow* r : shown)
    placed.push_back(
        {*r->memory_rel * 100 - 0.9 * char_w, *r->memory_rel * 100 + 0.9 * char_w, r->score});
  std::ostringstream cmd;
  cmd << "$pts << EOD\n";
  for (const TableRow* r : shown) {
    const double m = *r->memory_rel * 100;
    const std::string text = plot::shorten(r->label, 40);
    const double x0 = m + char_w, x1 = x0 + char_w * static_cast<double>(text.size() + 1);
    const double y = place_label(placed, x0, x1, r->score, line_h);
    pts.push_back({m, r->score});
    names.push_back(text);
    // Columns: memory %, score, label index, label height, the score's 95%
    // interval (the point itself when it has none).
    const double lo = std::isnan(r->score_ci.lo) ? r->score : r->score_ci.lo;
    const double hi = std::isnan(r->score_ci.hi) ? r->score : r->score_ci.hi;
    cmd << m << " " << r->score << " " << names.size() << " " << y << " " << lo << " " << hi
        << "\n";
  }
  cmd << "EOD\n$front << EOD\n";
  // The front: by memory, and at equal memory the best score only.
  std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  double best = -1;
  for (const auto& [m, sc] : pts) {
    if (sc > best) {
      cmd << m << " " << sc << "\n";
      best = sc;
    }
  }
  // The last step runs on to the largest memory plotted (steps need two
  // points, and nothing to the right beats the best score).
  if (!pts.empty()) cmd << max_memory << " " << best << "\n";
  cmd << "EOD\n"
      << label_array("point_label", names)
      << "set title 'Score vs KV memory'\nset xlabel 'KV bytes (% of the full cache)'\n"
      << "set ylabel 'score (bars: 95% interval)'\nset yrange [0:1.05]\n"
      // Room on the right for the last point's bar and label.
      << "set xrange [0:" << x_max << "]\n"
      << "set key bottom right\n"
      << "plot $front using 1:2 with steps lw 2 lc rgb '#888888' title 'Pareto front', "
         "$pts using 1:2:5:6 with yerrorbars pt 7 ps 1.5 lw 1.5 lc rgb '#2b83ba' "
         "title 'configurations (95% interval)', "
         "$pts using 1:4:(point_label[int($3)]) with labels left offset 1,0 font ',8' "
         "notitle\n";
  if (!pts.empty()) s.emit(dir, "score-vs-memory", "1200,700", cmd.str());
}

// Score vs budget (cells carry policy.base and policy.budget): one line per
// base policy, per model and base policy with several models. Token budgets
// only: ratio budgets are score-vs-ratio's (plots_ratio.h), and one axis
// cannot hold both units.
void score_vs_budget(plot::Script& s, const std::vector<PlotModel>& models,
                     const std::string& dir) {
  // base policy -> budget -> [cells] scores
  std::map<std::string, std::map<double, std::vector<double>>> lines;
  double lo = 1e300, hi = 0;
  for (const PlotModel& model : models)
    for (const auto& c : *model.cells) {
      const json& p = c["policy"];
      if (!p.contains("budget") || p["budget"].is_null()) continue;
      const double budget = p["budget"].get<double>();
      if (budget <= 1) continue;  // a ratio
      lo = std::min(lo, budget);
      hi = std::max(hi, budget);
      const std::string base = p.value("base", std::string("?"));
      lines[models.size() > 1 ? model.label + ": " + base : base][budget].push_back(
          c["score"].get<double>());
    }
  std::ostringstream cmd;
  int block = 0;
  std::string plot = "plot ";
  for (const auto& [base, pts] : lines) {
    cmd << "$b" << block << " << EOD\n";
    // Columns: budget, mean score, its 95% interval (the mean itself when
    // it has none: one fractional score).
    for (const auto& [budget, scores] : pts) {
      const stats::Estimate e = stats::estimate_mean(scores);
      cmd << budget << " " << e.mean << " " << (std::isnan(e.ci.lo) ? e.mean : e.ci.lo) << " "
          << (std::isnan(e.ci.hi) ? e.mean : e.ci.hi) << "\n";
    }
    cmd << "EOD\n";
    plot += std::string(block ? ", " : "") + "$b" + std::to_string(block) +
            " using 1:2:3:4 with yerrorlines lw 2 " + plot::series_style(block) + " title " +
            label(base);
    ++block;
  }
  cmd << "set title 'Score vs budget'\nset xlabel 'budget (tokens per KV head)'\n"
      << "set ylabel 'score (bars: 95% interval)'\nset yrange [0:1.05]\nset key bottom right\n"
      // Token budgets spread over powers of two read best on a log axis.
      << (lo > 1 && hi / lo >= 4 ? "set logscale x 2\nset xrange [" + std::to_string(lo / 1.5) +
                                       ":" + std::to_string(hi * 1.5) + "]\n"
                                 : std::string("set xrange [0:*]\n"))
      << plot << "\n";
  if (block) s.emit(dir, "score-vs-budget", "900,600", cmd.str());
}

// Speed bars of one model's configurations (`model`: its label with several
// models, for the title).
void speed_bars(plot::Script& s, const std::vector<TableRow>& rows, const std::string& dir,
                const std::string& stem, const std::string& model) {
  std::ostringstream cmd;
  cmd << "$speed << EOD\n";
  int n = 0;
  size_t longest = 0;
  std::vector<std::string> names;
  const auto v = [](double x) { return std::isnan(x) ? std::string("NaN") : std::to_string(x); };
  for (const auto& r : rows) {
    if (std::isnan(r.decode_tok_s)) continue;
    // Columns: index, decode median, prefill median, decode min, max,
    // prefill min, max.
    cmd << n++ << " " << v(r.decode_tok_s) << " " << v(r.prefill_tok_s) << " "
        << v(r.decode_range.lo) << " " << v(r.decode_range.hi) << " " << v(r.prefill_range.lo)
        << " " << v(r.prefill_range.hi) << "\n";
    names.push_back(plot::shorten(r.label, 40));
    longest = std::max(longest, std::min<size_t>(r.label.size(), 41));
  }
  cmd << "EOD\n"
      << label_array("speed_label", names) << "set title "
      << (model.empty()
              ? std::string("'Speed: median over cells, whiskers from the slowest to the "
                            "fastest cell'")
              : label("Speed: median over cells, whiskers from the slowest to the fastest "
                      "cell: " +
                      plot::shorten(model, 60)))
      << "\nset ylabel 'tokens/s'\nset style fill solid 0.8\n"
      << "set boxwidth 0.4\nset xtics rotate by -35 font ',8' nomirror\n"
      << "set bmargin " << 2 + longest * 0.28 << "\nset key outside top center horizontal\n"
      << "set offsets 0.5, 0.5, 0, 0\nset yrange [0:*]\n"
      << "plot $speed using ($1-0.2):2:xtic(speed_label[int($1)+1]) with boxes lc rgb '#2b83ba' "
         "title 'decode', "
         "$speed using ($1+0.2):3 with boxes lc rgb '#abdda4' title 'prefill', "
         "$speed using ($1-0.2):2:4:5 with yerrorbars pt 7 ps 0.3 lc rgb '#333333' notitle, "
         "$speed using ($1+0.2):3:6:7 with yerrorbars pt 7 ps 0.3 lc rgb '#333333' notitle\n";
  if (n) s.emit(dir, stem, "1000,640", cmd.str());
}

// Score vs memory of several models in one figure: each model its colour
// and marker (named in the legend) and its own Pareto front, dashed; point
// labels placed as in score_vs_memory, clear of every model's points.
void score_vs_memory_models(plot::Script& s, const std::vector<PlotModel>& models,
                            const std::string& dir) {
  double max_memory = 0;
  for (const PlotModel& m : models)
    for (const auto& r : *m.rows)
      if (r.memory_rel) max_memory = std::max(max_memory, *r.memory_rel * 100);
  const double x_max = std::max(1.0, max_memory * 1.15);
  const double char_w = x_max * 5.5 / 1060, line_h = 1.05 * 13 / 600;
  std::vector<Box> placed;
  for (const PlotModel& m : models)
    for (const auto& r : *m.rows)
      if (r.memory_rel)
        placed.push_back(
            {*r.memory_rel * 100 - 0.9 * char_w, *r.memory_rel * 100 + 0.9 * char_w, r.score});
  std::ostringstream cmd;
  std::string plot;
  bool any = false;
  for (size_t k = 0; k < models.size(); ++k) {
    std::vector<std::pair<double, double>> pts;
    std::vector<std::string> names;
    cmd << "$pts" << k << " << EOD\n";
    for (const auto& r : *models[k].rows) {
      if (!r.memory_rel) continue;
      const double m = *r.memory_rel * 100;
      const std::string text = plot::shorten(r.label, 40);
      const double x0 = m + char_w, x1 = x0 + char_w * static_cast<double>(text.size() + 1);
      const double y = place_label(placed, x0, x1, r.score, line_h);
      pts.push_back({m, r.score});
      names.push_back(text);
      const double lo = std::isnan(r.score_ci.lo) ? r.score : r.score_ci.lo;
      const double hi = std::isnan(r.score_ci.hi) ? r.score : r.score_ci.hi;
      cmd << m << " " << r.score << " " << names.size() << " " << y << " " << lo << " " << hi
          << "\n";
    }
    cmd << "EOD\n$front" << k << " << EOD\n";
    std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    double best = -1, model_max = 0;
    for (const auto& [m, sc] : pts) {
      model_max = std::max(model_max, m);
      if (sc > best) {
        cmd << m << " " << sc << "\n";
        best = sc;
      }
    }
    if (!pts.empty()) cmd << model_max << " " << best << "\n";
    cmd << "EOD\n" << label_array("point_label_" + std::to_string(k), names);
    if (pts.empty()) continue;
    any = true;
    const std::string colour = plot::series_colour(k);
    const std::string id = std::to_string(k);
    plot += std::string(plot.empty() ? "plot " : ", ") + "$front" + id +
            " using 1:2 with steps lw 1.5 dt 2 lc rgb '" + colour + "' notitle, $pts" + id +
            " using 1:2:5:6 with yerrorbars pt " + std::to_string(plot::series_point(k)) +
            " ps 1.5 lw 1.5 lc rgb '" + colour + "' title " +
            label(plot::shorten(models[k].label, 50)) + ", $pts" + id + " using 1:4:(point_label_" +
            id + "[int($3)]) with labels left offset 1,0 font ',8' tc rgb '" + colour + "' notitle";
  }
  cmd << "set title 'Score vs KV memory per model (dashed: each model''s Pareto front)'\n"
         "set xlabel 'KV bytes (% of the model''s full cache)'\n"
      << "set ylabel 'score (bars: 95% interval)'\nset yrange [0:1.05]\n"
      << "set xrange [0:" << x_max << "]\n"
      << "set key outside right top vertical title 'model'\n"
      << plot << "\nset key notitle\n";
  if (any) s.emit(dir, "score-vs-memory", "1200,700", cmd.str());
}

}  // namespace

PlotResult write_plots(const std::vector<json>& cells, const std::vector<TableRow>& rows,
                       const std::string& dir, int inherit_fd) {
  return write_plots({PlotModel{"", &cells, &rows}}, dir, inherit_fd);
}

PlotResult write_plots(const std::vector<PlotModel>& models, const std::string& dir,
                       int inherit_fd) {
  PlotResult result;
  std::error_code ec;
  std::filesystem::create_directories(dir + "/plots", ec);
  plot::Script s;
  s.body << "set encoding utf8\nset grid\n";

  if (models.size() == 1) {
    const PlotModel& m = models.front();
    plot::needle_heatmaps(s, *m.cells, *m.rows, dir);
    plot::needle_layers(s, *m.cells, *m.rows, dir);
    score_vs_memory(s, *m.rows, dir);
    score_vs_budget(s, models, dir);
    plot::score_vs_ratio(s, models, dir);
    speed_bars(s, *m.rows, dir, "speed", "");
  } else {
    // Per model figures are numbered in the models' order: file names never
    // come from a label.
    for (size_t k = 0; k < models.size(); ++k) {
      const PlotModel& m = models[k];
      const std::string n = "-" + std::to_string(k + 1);
      plot::needle_heatmaps(s, *m.cells, *m.rows, dir, "heatmaps" + n, m.label);
      plot::needle_layers(s, *m.cells, *m.rows, dir, "needle-layers" + n, m.label);
    }
    score_vs_memory_models(s, models, dir);
    score_vs_budget(s, models, dir);
    plot::score_vs_ratio(s, models, dir);
    for (size_t k = 0; k < models.size(); ++k)
      speed_bars(s, *models[k].rows, dir, "speed-" + std::to_string(k + 1), models[k].label);
  }

  if (s.files.empty()) return result;
  // gnuplot writes temporaries, renamed into place (plot_files.h); every
  // target is a regular file or absent (RunFolder::open checked plots/).
  std::vector<std::string> targets;
  for (const auto& f : s.files) targets.push_back(dir + "/" + f);
  const PlotRun run = run_gnuplot(targets, s.body.str(), inherit_fd);
  if (run.status == 127) {
    result.warning =
        "gnuplot could not be started (is gnuplot installed? scripts/setup.sh installs "
        "gnuplot-nox); no plots written";
    return result;
  }
  if (run.status != 0)
    result.warning = "gnuplot failed (exit " + std::to_string(run.status) +
                     "); no plots written (is gnuplot installed? scripts/setup.sh installs "
                     "gnuplot-nox)";
  for (size_t i = 0; i < s.files.size(); ++i)
    if (run.published[i]) result.files.push_back(s.files[i]);
  return result;
}

}  // namespace kvbench
