// The continuous metrics `compare` tests beside the score, paired per
// instance: answer NLL, KL(full || policy) and top-1 agreement with the full
// cache. A policy that loses a little everywhere moves them on nearly every
// instance while a handful of pass/fail scores stay put, so they see a
// regression the score cannot (a budget silently halved, say).
//
// Each is oriented so that a drop is a worsening (top-1 agreement as it is;
// NLL and KL negated) and judged like a fractional score: stats::paired_p
// (paired bootstrap and mid-p sign test, one-sided, p < 0.05) AND a
// worsening of the mean larger than the tolerance (nats for NLL and KL, a
// share for top-1 agreement).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace kvbench {

// One cell's metrics; NaN where the cell has none (null in its record).
struct CellMetrics {
  double answer_nll = NAN, kl_full = NAN, top1_agreement = NAN;
};

struct MetricCheck {
  const char* metric = "";  // "answer NLL", "KL(full‖policy)", "top-1 agreement"
  int64_t n = 0;            // instances with the metric in both runs
  double base_mean = NAN, new_mean = NAN;
  double worsening = NAN;  // of the mean, in the metric's unit (> 0: worse)
  double p = NAN;          // one-sided, for a worsening
  bool changed = false;    // any instance's value differs
  bool regressed = false;  // significant and beyond the tolerance
};

// "REGRESSED", "better", "worse within tolerance", "worse, not significant",
// or "unchanged" when no instance's value differs.
const char* metric_status(const MetricCheck& c);

// base[i] and next[i] are the same instance's cells. One check per metric
// that both runs have for at least one instance.
std::vector<MetricCheck> compare_metrics(const std::vector<CellMetrics>& base,
                                         const std::vector<CellMetrics>& next, double tolerance);

}  // namespace kvbench
