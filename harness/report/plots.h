// Plots of a run through a gnuplot pipe, each as PNG and SVG in <dir>/plots/:
//   heatmaps-task<i>.png  one figure per needle task i (1, 2, ... by task
//                         name): every configuration's
//                         needle score by depth x context length, small
//                         multiples on one viridis scale, k/n in each cell
//                         (plots_needles.h)
//   needle-layers.png     needle survival per layer, held and attended,
//                         global and local layers marked (plots_needles.h)
//   score-vs-memory.png   score against KV memory, panels by task and
//                         model, log memory axis (plots_memory.h)
//   score-vs-ratio.png    score against compression ratio, panels by task
//                         group, context length (when several) and model
//                         (plots_ratio.h)
//   score-vs-budget.png   score against budget, token and ratio budgets in
//                         panels of their own (plots_budget.h)
//   speed.png             decode and prefill tokens/s per configuration:
//                         medians, whiskers from the slowest to the fastest cell
// The faceted figures share one house style (plot_style.h): families by
// Okabe-Ito colour and marker named in a legend panel, the full cache as a
// dashed line with its interval band.
// File names are fixed or numbered: none comes from a label. A new figure's
// name needs its prefix in report_plot_name (plot_prune.cpp), or a re-render
// never removes it once undrawn.
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
  // [layer] true for a sliding-window ("local") layer; empty when every
  // layer is global or the kinds are unknown (layer_kinds.h).
  std::vector<bool> local_layers;
};

// One model: the figures above. Several (a run of several models): per model
// k (1, 2, ... in the given order) heatmaps-k-task<i>, needle-layers-k and
// speed-k, titled with its label; one score-vs-memory, score-vs-ratio and
// score-vs-budget with a row of panels per model (memory as a share of that
// model's full cache).
// Written through temporaries renamed into place (plot_files.h);
// `inherit_fd`: the run folder's lock, which gnuplot holds while it writes.
PlotResult write_plots(const std::vector<PlotModel>& models, const std::string& dir,
                       int inherit_fd = -1);
// The SVG files of figure `stem` among `files` (write_plots' result):
// plots/<stem>.svg, else its per-task parts plots/<stem>-task1.svg,
// -task2.svg, ... in task order; empty when gnuplot wrote none.
std::vector<std::string> figure_svgs(const std::vector<std::string>& files,
                                     const std::string& stem);

// The one-model form.
PlotResult write_plots(const std::vector<nlohmann::json>& cells, const std::vector<TableRow>& rows,
                       const std::string& dir, int inherit_fd = -1);

}  // namespace kvbench
