// The paired ratio's score interval (harness/report/paired_ratio.h), which
// Context Retention uses for pass/fail scores: its restricted maximum
// likelihood against the closed form of the Lagrange conditions, its ends
// against the definition |T| = z, no collapse where the bootstrap collapsed,
// and its coverage on simulated pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "datasets/rng.h"
#include "harness/report/paired_ratio.h"

namespace kvbench::stats {
namespace {

// With every count positive the Lagrange conditions give
//   p11 = n11 / (n + l (1 - theta)), p10 = n10 / (n + l), p01 = n01 / (n - l theta),
//   p00 = n00 / n,
// with l the root of p11 (1 - theta) + p10 - theta p01 = 0 (decreasing in l),
// found here by bisection: another computation than the code's search.
CellProbabilities lagrange(const PairedCounts& c, double theta) {
  const double n = static_cast<double>(c.both + c.first_only + c.second_only + c.neither);
  const auto at = [&](double l) {
    return CellProbabilities{c.both / (n + l * (1 - theta)), c.first_only / (n + l),
                             c.second_only / (n - l * theta), c.neither / n};
  };
  const auto g = [&](double l) {
    const CellProbabilities p = at(l);
    return p.p11 * (1 - theta) + p.p10 - theta * p.p01;
  };
  // Denominators stay positive on (lo, hi).
  double lo = -n, hi = n / theta;
  if (theta < 1) lo = std::max(lo, -n / (1 - theta));
  if (theta > 1) hi = std::min(hi, n / (theta - 1));
  lo += 1e-9 * n;
  hi -= 1e-9 * n;
  for (int i = 0; i < 200; ++i) {
    const double m = (lo + hi) / 2;
    (g(m) > 0 ? lo : hi) = m;
  }
  return at((lo + hi) / 2);
}

std::vector<double> scores(int ones, int zeros) {
  std::vector<double> v(ones, 1.0);
  v.resize(ones + zeros, 0.0);
  return v;
}

TEST(PairedRatio, RestrictedMleMatchesTheLagrangeConditions) {
  for (const PairedCounts c :
       {PairedCounts{7, 3, 5, 5}, PairedCounts{12, 1, 6, 1}, PairedCounts{2, 4, 9, 25}}) {
    for (const double theta : {0.3, 0.8, 1.0, 1.4}) {
      SCOPED_TRACE(std::to_string(c.both) + "," + std::to_string(c.first_only) + "," +
                   std::to_string(c.second_only) + " theta " + std::to_string(theta));
      const CellProbabilities got = restricted_mle(c, theta), want = lagrange(c, theta);
      EXPECT_NEAR(got.p11, want.p11, 1e-6);
      EXPECT_NEAR(got.p10, want.p10, 1e-6);
      EXPECT_NEAR(got.p01, want.p01, 1e-6);
      EXPECT_NEAR(got.p00, want.p00, 1e-6);
      EXPECT_NEAR(got.p11 + got.p10, theta * (got.p11 + got.p01), 1e-12);  // the null holds
    }
  }
}

// The collapse the bootstrap showed (results/findings/h2o: 0.0% [0.0, 0.0]
// at n = 20): a row that failed every instance, the full cache passing 8.
TEST(PairedRatio, AllFailedIsNotAZeroWidthInterval) {
  const std::vector<double> row = scores(0, 20), full = scores(8, 12);
  const Interval ci = paired_ratio_interval(row, full);
  EXPECT_EQ(ci.lo, 0.0);
  EXPECT_GT(ci.hi, 0.2);
  EXPECT_LT(ci.hi, 0.6);
  // The upper end is where T crosses -z (the definition), to 1e-6.
  PairedCounts c{0, 0, 8, 12};
  EXPECT_NEAR(paired_ratio_score(c, ci.hi), -1.959963984540054, 1e-6);
  // As much as the bootstrap knew: it returned [0, 0].
  const Interval boot = bootstrap_ratio_interval(row, full);
  EXPECT_EQ(boot.hi, 0.0);
}

TEST(PairedRatio, EndsSolveTheScoreEquationAndHoldTheEstimate) {
  // 20 pairs: 9 both, 2 row only, 5 full only, 4 neither: estimate 11/14.
  std::vector<double> row, full;
  const auto add = [&](int k, double a, double b) {
    for (int i = 0; i < k; ++i) row.push_back(a), full.push_back(b);
  };
  add(9, 1, 1);
  add(2, 1, 0);
  add(5, 0, 1);
  add(4, 0, 0);
  const Interval ci = paired_ratio_interval(row, full);
  const PairedCounts c{9, 2, 5, 4};
  EXPECT_NEAR(paired_ratio_score(c, ci.lo), 1.959963984540054, 1e-6);
  EXPECT_NEAR(paired_ratio_score(c, ci.hi), -1.959963984540054, 1e-6);
  EXPECT_LT(ci.lo, 11.0 / 14.0);
  EXPECT_GT(ci.hi, 11.0 / 14.0);
  // Identical pairs: the interval holds 1 and has width.
  const Interval same = paired_ratio_interval(scores(12, 8), scores(12, 8));
  EXPECT_LT(same.lo, 1.0);
  EXPECT_GT(same.hi, 1.0);
  // No full-cache pass: undefined.
  EXPECT_TRUE(std::isnan(paired_ratio_interval(scores(3, 7), scores(0, 10)).lo));
}

// 400 simulated studies of 30 pairs from cells (0.30, 0.05, 0.25, 0.40):
// theta = 0.35 / 0.55. A 95% interval should cover it about 95% of the
// time; with 400 draws the count's standard error is 1.1 points.
TEST(PairedRatio, CoversTheTrueRatioAbout95PercentOfTheTime) {
  datasets::Rng rng(20261127);
  const double theta = 0.35 / 0.55;
  int covered = 0;
  const int studies = 400;
  for (int s = 0; s < studies; ++s) {
    std::vector<double> row, full;
    for (int i = 0; i < 30; ++i) {
      const double u = rng.real();
      const bool a = u < 0.35, b = u < 0.30 || (u >= 0.35 && u < 0.60);
      row.push_back(a), full.push_back(b);
    }
    const Interval ci = paired_ratio_interval(row, full);
    covered += ci.lo <= theta && theta <= ci.hi;
  }
  EXPECT_GE(covered, static_cast<int>(0.91 * studies)) << covered;
  EXPECT_LE(covered, static_cast<int>(0.985 * studies)) << covered;
}

}  // namespace
}  // namespace kvbench::stats
