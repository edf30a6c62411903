#include "harness/history/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "harness/encode/gnuplot.h"
#include "harness/history/time_text.h"
#include "harness/report/plot_files.h"
#include "harness/report/plot_script.h"
#include "harness/report/plots.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench::history {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::string plot_script(const Trend& t, const std::string& output_file) {
  // Panels: (experiment, task) -> its series, by configuration.
  std::map<std::pair<std::string, std::string>, std::vector<const Series*>> panels;
  for (const Series& s : t.series) panels[{s.experiment, s.task}].push_back(&s);
  const size_t n_panels = panels.size();
  // Up to three panels stacked (the key to the right of each), more in two columns.
  const size_t cols = n_panels > 3 ? 2 : 1, rows = (n_panels + cols - 1) / cols;
  const int width = cols == 1 ? 1000 : 1600, height = 80 + static_cast<int>(rows) * 420;
  const bool svg = ends_with(output_file, ".svg");

  std::ostringstream o;
  o << "set encoding utf8\n"
    << (svg ? "set terminal svg enhanced font 'Sans,10' size "
            : "set terminal pngcairo enhanced font 'Sans,10' size ")
    << width << "," << height << "\n"
    << "set output " << gnuplot_output(plot_temporary(output_file)) << "\n";
  // Commit tics: short id and date, in history order at x = 1..N.
  std::string tics = "set xtics (";
  for (size_t i = 0; i < t.commits.size(); ++i) {
    const CommitInfo& c = t.commits[i];
    tics += (i ? ", " : "") +
            plot::tic_label(commit_label(c) + " " + utc_day(c.order_time).substr(5)) + " " +
            std::to_string(i + 1);
  }
  tics += ") rotate by -30 font ',8'\n";
  o << "set multiplot layout " << rows << "," << cols << " title "
    << plot::label(
           "Score per configuration over commits (bars: 95% interval; circles: "
           "regression point, one-sided p < 0.05 and drop > " +
           num(t.tolerance) + ")")
    << "\n";
  for (const auto& [key, series] : panels) {
    std::ostringstream data, plot;
    const size_t k = series.size();
    // Keys name the model too when the panel's series come from several.
    bool by_model = false;
    for (const Series* s : series) by_model = by_model || s->model != series.front()->model;
    // Configurations spread over +-0.2 around each commit.
    const double spread = k > 1 ? 0.4 / static_cast<double>(k - 1) : 0.0;
    plot << "plot ";
    std::string marks;  // the panel's regression points
    for (size_t j = 0; j < k; ++j) {
      const Series& s = *series[j];
      const double dx = (static_cast<double>(j) - static_cast<double>(k - 1) / 2) * spread;
      data << "$s" << j << " << EOD\n";
      for (const TrendPoint& p : s.points) {
        const double x = static_cast<double>(p.commit + 1) + dx;
        const double lo = std::isnan(p.score.ci.lo) ? p.score.mean : p.score.ci.lo;
        const double hi = std::isnan(p.score.ci.hi) ? p.score.mean : p.score.ci.hi;
        data << num(x) << " " << num(p.score.mean) << " " << num(lo) << " " << num(hi) << "\n";
        if (p.regressed) marks += num(x) + " " + num(p.score.mean) + "\n";
      }
      data << "EOD\n";
      plot << (j ? ", " : "") << "$s" << j << " using 1:2:3:4 with yerrorlines lw 1.5 "
           << plot::series_style(j) << " ps 0.8 title "
           << plot::label(by_model ? s.model + ": " + s.configuration : s.configuration);
    }
    if (!marks.empty()) {
      data << "$marks << EOD\n" << marks << "EOD\n";
      plot << ", $marks using 1:2 with points pt 6 ps 3 lw 2.5 lc rgb '#d7191c' title "
              "'regression point'";
    }
    o << data.str() << "reset\nset grid\n"
      << "set title " << plot::label(key.second + " (" + key.first + ")") << "\n"
      << "set ylabel 'score'\nset yrange [-0.05:1.05]\n"
      << "set xrange [0.5:" << t.commits.size() + 0.5 << "]\n"
      << tics << "set key outside right top font ',8'\n"
      << plot.str() << "\n";
  }
  o << "unset multiplot\nunset output\n";
  return o.str();
}

void write_trend_plot(const Trend& t, const std::string& out) {
  if (!ends_with(out, ".png") && !ends_with(out, ".svg"))
    throw InputError("-o " + escaped_text(out, 512) + ": expected a .png or .svg file name");
  if (t.series.empty()) throw InputError("nothing to plot: the history has no cells");
  // gnuplot writes a temporary beside the target, renamed over it once
  // gnuplot succeeded (harness/report/plot_files.h).
  const PlotRun run = run_gnuplot({out}, plot_script(t, out));
  if (run.status != 0 || !run.published.front())
    throw InputError(escaped_text(out, 512) + ": " +
                     (run.status == 127 ? "gnuplot could not be started (scripts/setup.sh installs "
                                          "gnuplot-nox)"
                      : run.status != 0 ? "gnuplot failed (exit " + std::to_string(run.status) + ")"
                                        : std::string("gnuplot wrote nothing")));
}

}  // namespace kvbench::history
