// `kvbench report DIR --versus A B`: two policies of one run compared on the
// same instances, the test a claim "A keeps more than B" needs (the report's
// own tables compare every configuration with the full cache, and each
// family only with the AUC leader).
//
// A and B each name a family (a label without its " (budget X)": every
// ratio budget of it, a score-vs-ratio curve) or one configuration (its
// label, e.g. "int4" or "Full cache"). The comparison points:
//   family against family   every compression ratio both have
//   family against config   every ratio of the family against the config
//   config against config   one point
// At each point the cells of the same instance are paired, and for the score
// and the three continuous measures (answer NLL, KL(full || policy), top-1
// agreement) the mean of the per-instance differences A - B is judged by
// stats::paired_difference: its 95% bootstrap interval and the two-sided
// sign-flip p; a measure missing from a cell (null) leaves that instance out
// of that measure only. Two families with two or more common ratios are also
// compared by their areas under the curve over those ratios (curve_stats.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/stats.h"

namespace kvbench {

// One comparison point: configuration a against configuration b.
struct VersusPoint {
  double ratio = NAN;  // the compression ratio (1 - budget) of the point; NaN when neither has one
  std::string a_label, b_label;
  int64_t n = 0;  // instances with a cell of both
  double a_score = NAN, b_score = NAN;
  stats::PairedDifference score, answer_nll, kl_full, top1;
  double memory = NAN;  // mean hot KV bytes of a over b's
};

struct Versus {
  std::string a, b;  // the names as given
  std::vector<VersusPoint> points;
  // Families over their common ratios (two or more): AUC of each and the
  // paired difference of the instances' areas.
  std::vector<double> auc_ratios;
  double a_auc = NAN, b_auc = NAN;
  stats::Interval a_auc_ci, b_auc_ci;  // 95%, bootstrap over instances
  stats::PairedDifference auc;
};

// The comparison over one model's cells. Throws InputError when a name is
// neither a family nor a configuration label of these cells, or when the two
// share no comparison point (families with no common ratio).
Versus compare_versus(const std::vector<nlohmann::json>& cells, const std::string& a,
                      const std::string& b);

// Whether `name` is a family or a configuration label of these cells.
bool versus_names(const std::vector<nlohmann::json>& cells, const std::string& name);

// The comparison as markdown (a paragraph for the AUC, a table of the points);
// names and labels pass through markdown_text.
std::string versus_markdown(const Versus& v);

// The same as JSON for scripts (`report --versus A B --json`), one object:
//   a, b, n (the most paired instances of a point), min_detectable_flips
//   auc: null, or {ratios, a: {mean, ci}, b: {mean, ci}, difference, verdict}
//   points: [{ratio, a_label, b_label, n, a_score, b_score, memory_ratio,
//             score, answer_nll, kl_full, top1_agreement (each a difference),
//             verdict ("higher" | "lower" | "unsettled" | "not distinguished",
//             of a's score against b's; null with no pairs)}]
// A difference: {n, delta, ci: [lo, hi], p, differ, split}; a value with no
// data is null. Strings are the labels as they are (JSON-escaped by dump()).
nlohmann::json versus_json(const Versus& v);

}  // namespace kvbench
