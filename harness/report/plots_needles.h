// The needle plots of a report, added to its gnuplot script:
//   heatmaps.png        every configuration's mean score by needle depth
//                       (rows, 0% at the top) and context length (columns),
//                       as small multiples in one figure with one shared
//                       colour scale (0 red, 1 green), in the table's order
//   needle-layers.png   needle survival per layer and configuration: held
//                       (in any tier) and attended (in the set attention read
//                       at question time), side by side, same colour scale
// No file name comes from a label: each figure holds every configuration
// (of one model: a run of several models has one of each per model).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/plot_script.h"
#include "harness/report/table.h"

namespace kvbench::plot {

// Nothing is added when no cell has a needle depth / per-layer survival.
// `stem`: the file name (kvbench's, never a label); `model`: with several
// models, the one these cells ran on, added to the figure's title.
void needle_heatmaps(Script& s, const std::vector<nlohmann::json>& cells,
                     const std::vector<TableRow>& rows, const std::string& dir,
                     const std::string& stem = "heatmaps", const std::string& model = "");
void needle_layers(Script& s, const std::vector<nlohmann::json>& cells,
                   const std::vector<TableRow>& rows, const std::string& dir,
                   const std::string& stem = "needle-layers", const std::string& model = "");

}  // namespace kvbench::plot
