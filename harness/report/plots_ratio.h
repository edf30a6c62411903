// Score against compression ratio, the figure kvpress's leaderboard is read
// by: x = the share of the context evicted (1 - a ratio budget), y = the
// mean score with its 95% interval; one line per policy family
// (policy_family, curve_stats.h), families told apart by colour and marker from the
// Okabe-Ito palette (safe for colour-blind readers) and named in a legend
// panel, never on the points; the full cache as a dashed line with its
// interval as a band. Panels: task groups in columns (all tasks, then
// RULER's categories present: retrieval, multi-hop tracing, aggregation,
// QA) and models in rows. Only configurations with a ratio budget are
// drawn; nothing is written when there are none.
#pragma once

#include <string>
#include <vector>

#include "harness/report/curve_stats.h"
#include "harness/report/plot_script.h"
#include "harness/report/plots.h"

namespace kvbench::plot {

// RULER's category of a task: "Retrieval" (passkey and the needle tasks),
// "Multi-hop tracing" (vt), "Aggregation" (cwe, fwe), "QA" (qa), else the
// task itself.
std::string task_group(const std::string& task);

// The most families score-vs-ratio draws: with more, it draws the
// kRatioFigureTop of highest AUC (averaged over the models that have one;
// their points spread a little sideways so bars do not cover each other),
// and score-vs-ratio-all every family.
inline constexpr size_t kRatioFigureTop = 8;

// Columns of panels: all tasks, each task group (when 2 to 8), each context
// length (when 2 to 8); a row per model.
// Adds plots/score-vs-ratio.{png,svg} (and score-vs-ratio-all.{png,svg}
// when there are more than kRatioFigureTop families) to the script.
void score_vs_ratio(Script& s, const std::vector<PlotModel>& models, const std::string& dir);

}  // namespace kvbench::plot
