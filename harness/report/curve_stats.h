// Statistics that compare score-vs-ratio curves (the leaderboard's): per
// policy family (plot::policy_family), the area under its curve with a
// bootstrap interval over instances, and each family against the leader as
// a paired comparison over the same instances and every ratio.
//
// Per instance i the family's curve s_i(x) over its tested compression
// ratios x_1 < ... < x_k (x = 1 - a ratio budget, k >= 2) gives
//   AUC_i = trapezoid area of s_i over [x_1, x_k] / (x_k - x_1),
// the mean score over the tested range; only instances with a cell at every
// ratio count. AUC = mean of AUC_i, its 95% interval a percentile bootstrap
// over instances (stats::bootstrap_mean_interval). A vs B: d_i = AUC_i(A) -
// AUC_i(B) over the instances both have; the mean with its bootstrap
// interval, and the two-sided paired sign-flip test on the mean of the d_i
// (stats::paired_permutation_p: the statistic the interval is about, so the
// two agree but at the margin). A difference is called one when p < 0.05 and
// the interval excludes 0; when only one of them says so, "unsettled at n";
// otherwise "not distinguished at n", never "equal".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/stats.h"

namespace kvbench {

// The family a configuration belongs to: its label without the
// " (budget X)" the grid's expansion appended.
std::string policy_family(const std::string& label);

// A cell of a configuration with a ratio budget (0 < b <= 1): its family,
// its compression ratio 1 - b and its configuration's index. None for the
// full cache, token budgets and budget-less configurations.
struct RatioPoint {
  std::string family;
  double ratio = 0;
  int64_t index = 0;
};
std::optional<RatioPoint> ratio_point(const nlohmann::json& cell);

// The families with a ratio point in any of `runs`, in the order of their
// first configuration (the config's).
std::vector<std::string> ratio_families(std::span<const std::vector<nlohmann::json>* const> runs);

struct CurveFamily {
  std::string family;
  std::vector<double> ratios;            // tested, ascending
  std::map<std::string, double> auc_of;  // instance id -> AUC_i
  double auc = NAN;                      // mean of AUC_i
  stats::Interval ci;                    // 95%, bootstrap over instances
};

// Families with at least two ratio budgets among one model's cells, in the
// order of their first configuration.
std::vector<CurveFamily> curve_families(const std::vector<nlohmann::json>& cells);

// AUC_i(a) - AUC_i(b) over the instances both have, judged as
// stats::paired_difference says.
using CurvePair = stats::PairedDifference;
CurvePair compare_curves(const CurveFamily& a, const CurveFamily& b);

// The markdown table: families ranked by AUC, each against the leader.
// Empty when no family has two ratios.
std::string curve_table_markdown(const std::vector<nlohmann::json>& cells);

}  // namespace kvbench
