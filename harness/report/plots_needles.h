// The needle plots of a report, added to its gnuplot script:
//   heatmaps-task<i>.png  per needle task i (1, 2, ... by task name;
//                       never pooling tasks, whose depths differ): every
//                       configuration's mean score by needle depth (rows,
//                       0% at the top) and context length
//                       (columns), small multiples in the table's order with
//                       one viridis colour scale (plot_style.h), each box
//                       printing k/n (summed score over its n instances)
//   needle-layers.png   needle survival per layer and configuration: held
//                       (in any tier) and attended (in the set attention read
//                       at question time), side by side, same colour scale;
//                       for a model with local (sliding-window) and global
//                       layers, a strip above the rows marks each layer's kind
// No file name comes from a label (tasks are numbered): each figure holds
// every configuration (of one model: a run of several models has one of each
// per model).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/plot_script.h"
#include "harness/report/table.h"

namespace kvbench::plot {

// Nothing is added when no cell has a needle depth / per-layer survival.
// `stem`: the file name (kvbench's, never a label; heatmaps add
// "-task<i>"); `model`: with several models, the one these cells ran on,
// added to the figure's title. `local_layers`: [layer] true for a local
// layer (PlotModel::local_layers); ignored unless it has one entry per layer.
void needle_heatmaps(Script& s, const std::vector<nlohmann::json>& cells,
                     const std::vector<TableRow>& rows, const std::string& dir,
                     const std::string& stem = "heatmaps", const std::string& model = "");
void needle_layers(Script& s, const std::vector<nlohmann::json>& cells,
                   const std::vector<TableRow>& rows, const std::string& dir,
                   const std::vector<bool>& local_layers = {},
                   const std::string& stem = "needle-layers", const std::string& model = "");

}  // namespace kvbench::plot
