#include "harness/history/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "harness/encode/gnuplot.h"
#include "harness/report/plot_files.h"
#include "harness/report/plot_script.h"
#include "harness/report/plots.h"
#include "harness/time_text.h"
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
  // Small multiples: a column per (experiment, task), a row per
  // (configuration, model), one series in each panel, so no series hides
  // another (dodged series around each commit did, at 0 and 1 most).
  using Key = std::pair<std::string, std::string>;
  std::vector<Key> columns, rows;
  for (const Series& s : t.series) {
    const Key c{s.experiment, s.task}, r{s.configuration, s.model};
    if (std::find(columns.begin(), columns.end(), c) == columns.end()) columns.push_back(c);
    if (std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end());
  std::map<std::pair<size_t, size_t>, const Series*> at;  // (row, column) -> series
  std::vector<size_t> lowest(columns.size(), 0);          // per column: its lowest panel's row
  for (const Series& s : t.series) {
    const size_t c = static_cast<size_t>(
        std::find(columns.begin(), columns.end(), Key{s.experiment, s.task}) - columns.begin());
    const size_t r = static_cast<size_t>(
        std::find(rows.begin(), rows.end(), Key{s.configuration, s.model}) - rows.begin());
    at[{r, c}] = &s;
    lowest[c] = std::max(lowest[c], r);
  }
  // A model name in panel titles only when the series come from several.
  bool by_model = false;
  for (const Series& s : t.series) by_model = by_model || s.model != t.series.front().model;

  // Pixels: panels of pw x ph (the plot area inset for its title and tics),
  // a title and column headers above, room for the rotated commit labels
  // and the axis title below the last row.
  const double pw = 330, ph = 150, top = 75, bottom = 95;
  const double width = pw * static_cast<double>(columns.size()) + 50;  // the last rotated label
  const double height = top + ph * static_cast<double>(rows.size()) + bottom;
  const bool svg = ends_with(output_file, ".svg");
  const auto sx = [&](double px) { return num(px / width); };
  const auto sy = [&](double px) { return num(1.0 - px / height); };  // px from the top

  std::ostringstream o;
  o << "set encoding utf8\n"
    << (svg ? "set terminal svg enhanced font 'Sans,10' size "
            : "set terminal pngcairo enhanced font 'Sans,10' size ")
    << static_cast<int>(width) << "," << static_cast<int>(height) << "\n"
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
  const std::string blank_tics =
      "set xtics 1, 1, " + std::to_string(t.commits.size()) + " format ''\n";

  // Two title lines (gnuplot's "\n" joins the literals): a narrow figure
  // of one or two columns has room for little more than 60 characters.
  o << "set multiplot title "
    << plot::label("Score per configuration over commits (bars: 95% interval)") << " . \"\\n\" . "
    << plot::label("red circles: regression point (one-sided p < 0.05, drop > " + num(t.tolerance) +
                   ")")
    << " font ',10'\n";
  bool first = true;
  for (const auto& [rc, series] : at) {
    const auto [r, c] = rc;
    const Series& s = *series;
    std::ostringstream data;
    std::string marks;  // the panel's regression points
    data << "$s << EOD\n";
    for (const TrendPoint& p : s.points) {
      const double x = static_cast<double>(p.commit + 1);
      const double lo = std::isnan(p.score.ci.lo) ? p.score.mean : p.score.ci.lo;
      const double hi = std::isnan(p.score.ci.hi) ? p.score.mean : p.score.ci.hi;
      data << num(x) << " " << num(p.score.mean) << " " << num(lo) << " " << num(hi) << "\n";
      if (p.regressed) marks += num(x) + " " + num(p.score.mean) + "\n";
    }
    data << "EOD\n";
    if (!marks.empty()) data << "$marks << EOD\n" << marks << "EOD\n";
    const double left = pw * static_cast<double>(c) + 60,
                 right = pw * static_cast<double>(c + 1) - 10;
    const double upper = top + ph * static_cast<double>(r) + 22;
    const double lower = top + ph * static_cast<double>(r + 1) - 14;
    const bool labelled = r == lowest[c];  // commit labels under each column's lowest panel
    o << data.str() << "reset\nset grid\n"
      << "set lmargin at screen " << sx(left) << "\nset rmargin at screen " << sx(right)
      << "\nset tmargin at screen " << sy(upper) << "\nset bmargin at screen " << sy(lower) << "\n"
      << "set title " << plot::label(by_model ? s.model + ": " + s.configuration : s.configuration)
      << " font ',9' offset 0,-0.6\n"
      // A margin above 1 and below 0: points there stay clear of the border.
      << "set yrange [-0.12:1.12]\nset ytics (0, 0.5, 1) font ',8'\nset ylabel 'score' font ',8'\n"
      << "set xrange [0.5:" << t.commits.size() + 0.5 << "]\n"
      << (labelled ? tics + "set xlabel 'commit (history order: short id, date)' font ',9'\n"
                   : blank_tics)
      << "unset key\n";
    if (first) {
      // Column headers, drawn with the first panel only.
      for (size_t k = 0; k < columns.size(); ++k)
        o << "set label " << k + 1 << " "
          << plot::label(columns[k].second + " (" + columns[k].first + ")") << " at screen "
          << sx(pw * (static_cast<double>(k) + 0.5) + 25) << ", screen " << sy(top - 12)
          << " center font ',10'\n";
    }
    o << "plot $s using 1:2:3:4 with yerrorlines lw 1.5 pt 7 ps 0.7 lc rgb '#0072B2' notitle";
    if (!marks.empty())
      o << ", $marks using 1:2 with points pt 6 ps 2.2 lw 2 lc rgb '#D55E00' title "
           "'regression point'";
    o << "\n";
    if (first) o << "unset label\n";
    first = false;
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
