// Score against budget: every configuration with a budget, whether the grid
// expanded it from "budgets" (policy.budget) or its spec names one
// ("h2o:budget=192", read back from policy.spec). Token budgets and ratio
// budgets are different units, so they get separate panels (columns): tokens
// per KV head on a log2 axis, the share of the prompt kept on [0, 1]; models
// in rows. One line per base policy (the spec without its budget, so
// "h2o:budget=192" joins the line of "h2o" with "budgets"), families by
// colour and marker (plot_style.h), named in a legend panel; bars: the mean
// score's 95% interval; the full cache as a dashed line with its interval
// as a band.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/plot_script.h"
#include "harness/report/plots.h"

namespace kvbench::plot {

struct CellBudget {
  std::string base;    // the spec without its budget
  bool ratio = false;  // a share of the prompt (<= 1), else tokens
  double value = 0;
};
// None for the full cache, a configuration without a budget and a spec that
// no longer parses.
std::optional<CellBudget> cell_budget(const nlohmann::json& cell);

// Adds plots/score-vs-budget.{png,svg}; nothing when no cell has a budget.
void score_vs_budget(Script& s, const std::vector<PlotModel>& models, const std::string& dir);

}  // namespace kvbench::plot
