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
#include "harness/report/plots_budget.h"
#include "harness/report/plots_memory.h"
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

}  // namespace

std::vector<std::string> figure_svgs(const std::vector<std::string>& files,
                                     const std::string& stem) {
  const auto has = [&](const std::string& f) {
    return std::find(files.begin(), files.end(), f) != files.end();
  };
  if (has("plots/" + stem + ".svg")) return {"plots/" + stem + ".svg"};
  std::vector<std::string> parts;
  for (int i = 1;; ++i) {
    const std::string f = "plots/" + stem + "-task" + std::to_string(i) + ".svg";
    if (!has(f)) break;
    parts.push_back(f);
  }
  return parts;
}

PlotResult write_plots(const std::vector<json>& cells, const std::vector<TableRow>& rows,
                       const std::string& dir, int inherit_fd) {
  return write_plots({PlotModel{"", &cells, &rows, {}}}, dir, inherit_fd);
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
    plot::needle_layers(s, *m.cells, *m.rows, dir, m.local_layers);
    plot::score_vs_memory(s, models, dir);
    plot::score_vs_budget(s, models, dir);
    plot::score_vs_ratio(s, models, dir);
    speed_bars(s, *m.rows, dir, "speed", "");
  } else {
    // Per model figures are numbered in the models' order: file names never
    // come from a label.
    for (size_t k = 0; k < models.size(); ++k) {
      const PlotModel& m = models[k];
      const std::string n = "-" + std::to_string(k + 1);
      plot::needle_heatmaps(s, *m.cells, *m.rows, dir, "heatmaps" + n, m.label);
      plot::needle_layers(s, *m.cells, *m.rows, dir, m.local_layers, "needle-layers" + n, m.label);
    }
    plot::score_vs_memory(s, models, dir);
    plot::score_vs_budget(s, models, dir);
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
