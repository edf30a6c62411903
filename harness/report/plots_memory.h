// Score against KV memory, faceted: a panel per task (columns, by name; "All
// tasks" first when there are several, the table's pooled rows) and per model
// (rows). x: the hot KV bytes at question time as a share of the full
// cache's on the same instances (TableRow::memory_rel of build_table over
// the panel's cells), on a log axis (compressed rows sit at 5-50%, where a
// linear axis crams them); y: the mean score with its 95% interval. One
// line per policy family (policy_family, curve_stats.h: a label without its
// " (budget X)"), its configurations in memory order, families by colour and
// marker (plot_style.h) and named in a legend panel, never on the points;
// the full cache as a dashed line with its interval as a band. Families at
// one memory are set side by side (dodge, plot_style.h) so none hides
// another. No Pareto front: the family lines carry the trade-off.
#pragma once

#include <string>
#include <vector>

#include "harness/report/plot_script.h"
#include "harness/report/plots.h"

namespace kvbench::plot {

// The tasks of the cells of `models`, by name.
std::vector<std::string> task_order(const std::vector<PlotModel>& models);

// Adds plots/score-vs-memory.{png,svg}; nothing when no configuration has a
// memory relative to the full cache.
void score_vs_memory(Script& s, const std::vector<PlotModel>& models, const std::string& dir);

}  // namespace kvbench::plot
