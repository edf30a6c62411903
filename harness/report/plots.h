// Plots of a run through a gnuplot pipe, each as PNG and SVG in <dir>/plots/:
//   heatmaps.png          every configuration's needle score by depth x context
//                         length, small multiples with one colour scale
//                         (plots_needles.h)
//   needle-layers.png     needle survival per layer, held and attended
//                         (plots_needles.h)
//   score-vs-memory.png   every configuration's score against its KV bytes (%
//                         of full), the Pareto front drawn through the best;
//                         error bars: the score's 95% interval (TableRow)
//   score-vs-ratio.png    score against compression ratio, panels by task
//                         group and model (plots_ratio.h)
//   score-vs-budget.png   score against budget, one line per base policy,
//                         error bars: the 95% interval (stats::estimate_mean)
//   speed.png             decode and prefill tokens/s per configuration:
//                         medians, whiskers from the slowest to the fastest cell
// File names are fixed or numbered: none comes from a label.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/table.h"

namespace kvbench {

struct PlotResult {
  std::vector<std::string> files;  // relative to dir, PNG and SVG
  std::string warning;             // non-empty when gnuplot is missing or failed
};

// One model's cells and table rows (build_table of those cells).
struct PlotModel {
  std::string label;  // the model's label (untrusted: only through label())
  const std::vector<nlohmann::json>* cells = nullptr;
  const std::vector<TableRow>* rows = nullptr;
};

// One model: the figures above. Several (a run of several models): per model
// k (1, 2, ... in the given order) heatmaps-k, needle-layers-k and speed-k,
// titled with its label; one score-vs-memory with every model (a colour and
// marker each, named in the legend, each with its own Pareto front, memory as
// a share of that model's full cache); one score-vs-budget with a line per
// model and base policy.
// Written through temporaries renamed into place (plot_files.h);
// `inherit_fd`: the run folder's lock, which gnuplot holds while it writes.
PlotResult write_plots(const std::vector<PlotModel>& models, const std::string& dir,
                       int inherit_fd = -1);
// The one-model form.
PlotResult write_plots(const std::vector<nlohmann::json>& cells, const std::vector<TableRow>& rows,
                       const std::string& dir, int inherit_fd = -1);

}  // namespace kvbench
