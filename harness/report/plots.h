// Plots of a run through a gnuplot pipe, each as PNG and SVG in <dir>/plots/:
//   heatmaps.png          every configuration's needle score by depth x context
//                         length, small multiples with one colour scale
//                         (plots_needles.h)
//   needle-layers.png     needle survival per layer, held and attended
//                         (plots_needles.h)
//   score-vs-memory.png   every configuration's score against its KV bytes (%
//                         of full), the Pareto front drawn through the best;
//                         error bars: the score's 95% interval (TableRow)
//   score-vs-budget.png   score against budget, one line per base policy,
//                         error bars: the 95% interval (stats::estimate_mean)
//   speed.png             decode and prefill tokens/s per configuration:
//                         medians, whiskers from the slowest to the fastest cell
// File names are fixed: none comes from a label.
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

PlotResult write_plots(const std::vector<nlohmann::json>& cells, const std::vector<TableRow>& rows,
                       const std::string& dir);

// `s` as a gnuplot string literal that stays one literal whatever it holds:
// single-quoted (no escapes, no `command` substitution, no @macros), quotes
// doubled, newlines and other control characters written as visible escapes
// (\n, \x01). Every string in every plot script goes through it.
std::string gnuplot_string(const std::string& s);

}  // namespace kvbench
