// Context Retention's interval when every score is pass/fail: the ratio of
// two paired proportions, theta = p1 / p2 (a configuration's pass rate over
// the full cache's, on the same instances), by the asymptotic score method
// for paired data (Nam & Blackwelder, Stat Med 21:689, 2002; Tang, Tang &
// Chan, Biom J 45:986, 2003). The pairs fall in four cells, n11 (both pass),
// n10 (the configuration only), n01 (the full cache only), n00 (neither).
// For a candidate theta the multinomial's maximum-likelihood probabilities
// under p1 = theta p2 (p~, restricted_mle) give the variance of
// p^1 - theta p^2, and
//   T(theta) = (p^1 - theta p^2) / sqrt(theta ((theta - 1) p~11 + (1 + theta) p~01) / n);
// the interval is every theta with |T(theta)| <= z (z the normal 97.5%
// quantile). Unlike the percentile bootstrap of the ratio it does not
// collapse: a configuration that failed all 20 instances where the full
// cache passed 8 gets [0, 0.48], not [0, 0]; it has zero width only in the
// limit, never for a finite n.
#pragma once

#include <cstdint>
#include <span>

#include "harness/report/stats.h"

namespace kvbench::stats {

struct PairedCounts {
  int64_t both = 0, first_only = 0, second_only = 0, neither = 0;  // n11, n10, n01, n00
};

// The four cells' probabilities maximizing the multinomial likelihood of
// `c` under p11 + p10 = theta (p11 + p01), theta > 0. The log-likelihood is
// concave on a convex polygon; maximized over p01 of the maximum over p11
// (both golden-section searches: a cell with no count may need mass, as
// p10 does when the configuration never passed and theta > 0).
struct CellProbabilities {
  double p11 = 0, p10 = 0, p01 = 0, p00 = 0;
};
CellProbabilities restricted_mle(const PairedCounts& c, double theta);

// T(theta) above; 0 when both its numerator and its variance are 0.
double paired_ratio_score(const PairedCounts& c, double theta);

// The 95% interval for sum(first) / sum(second) over paired pass/fail
// scores (first[i], second[i] in {0, 1}, equal sizes, sum(second) > 0).
// The upper end is +inf when no finite theta is excluded.
Interval paired_ratio_interval(std::span<const double> first, std::span<const double> second);

}  // namespace kvbench::stats
