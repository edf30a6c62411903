// The statistics module against known values: Wilson intervals, one-sided
// mid-p McNemar p-values, the bootstrap's determinism and its behaviour on cases
// whose answer is known, and the smallest detectable drops.
#include <gtest/gtest.h>

#include <vector>

#include "harness/report/stats.h"

namespace kvbench::stats {
namespace {

TEST(Stats, WilsonIntervalKnownValues) {
  // Reference values: Wilson's closed form with z = 1.959964, evaluated
  // separately in double precision.
  const Interval a = wilson_interval(7, 10);
  EXPECT_NEAR(a.lo, 0.396778, 1e-6);
  EXPECT_NEAR(a.hi, 0.892209, 1e-6);
  const Interval none = wilson_interval(0, 10);
  EXPECT_EQ(none.lo, 0.0);
  EXPECT_NEAR(none.hi, 0.277533, 1e-6);
  const Interval all = wilson_interval(10, 10);
  EXPECT_NEAR(all.lo, 0.722467, 1e-6);
  EXPECT_LE(all.hi, 1.0);
  EXPECT_NEAR(all.hi, 1.0, 1e-12);
  const Interval half = wilson_interval(5, 10);
  EXPECT_NEAR(half.lo, 0.236593, 1e-6);
  EXPECT_NEAR(half.hi, 0.763407, 1e-6);
}

TEST(Stats, McNemarMidPKnownValues) {
  // p = P(X > b) + P(X = b) / 2, X ~ Binomial(b + c, 1/2), by hand.
  EXPECT_DOUBLE_EQ(mcnemar_midp_drop_p(1, 0), 0.25);         // 1/2 · 1/2
  EXPECT_DOUBLE_EQ(mcnemar_midp_drop_p(3, 0), 0.0625);       // 1/2 · 1/8: not yet significant
  EXPECT_DOUBLE_EQ(mcnemar_midp_drop_p(4, 0), 0.03125);      // 1/2 · 1/16: the first that is
  EXPECT_DOUBLE_EQ(mcnemar_midp_drop_p(6, 0), 0.0078125);    // 1/2 · 1/64
  EXPECT_DOUBLE_EQ(mcnemar_midp_drop_p(0, 4), 0.96875);      // one-sided: a rise is no drop
  EXPECT_DOUBLE_EQ(mcnemar_midp_drop_p(2, 2), 0.5);          // as many rose as fell
  EXPECT_DOUBLE_EQ(mcnemar_midp_drop_p(0, 0), 1.0);          // nothing discordant
  EXPECT_DOUBLE_EQ(mcnemar_midp_drop_p(5, 1), 0.0625);       // (1 + 6/2) / 64
  EXPECT_NEAR(mcnemar_midp_drop_p(10, 2), 0.0112305, 1e-7);  // (1 + 12 + 66/2) / 4096
  EXPECT_FALSE(significant(mcnemar_midp_drop_p(3, 0)));
  EXPECT_TRUE(significant(mcnemar_midp_drop_p(4, 0)));
  // The mid-p is the exact one-sided p, P(X >= b), less half of P(X = b).
  EXPECT_DOUBLE_EQ(mcnemar_midp_drop_p(4, 0), 1.0 / 16 - 0.5 / 16);
}

TEST(Stats, ScoreKindFromTheData) {
  const std::vector<double> binary = {0, 1, 1, 0}, fractional = {0, 0.5, 1};
  EXPECT_EQ(score_kind(binary), ScoreKind::PassFail);
  EXPECT_EQ(score_kind(fractional), ScoreKind::Fractional);
  EXPECT_EQ(score_kind(std::vector<double>{}), ScoreKind::PassFail);
  const Estimate e = estimate_mean(binary);
  EXPECT_EQ(e.n, 4);
  EXPECT_DOUBLE_EQ(e.mean, 0.5);
  EXPECT_EQ(e.kind, ScoreKind::PassFail);
  EXPECT_DOUBLE_EQ(e.ci.lo, wilson_interval(2, 4).lo);
  EXPECT_EQ(format_estimate(0.7, wilson_interval(7, 10)), "0.700 [0.397, 0.892]");
  EXPECT_EQ(format_estimate(NAN, {}), "–");
}

TEST(Stats, BootstrapIsDeterministicAndRight) {
  // 5 of 10: a resample's mean is Binomial(10, 1/2) / 10, whose 2.5% and
  // 97.5% quantiles are 0.2 and 0.8 (P(X <= 1) = 0.011, P(X <= 2) = 0.055).
  const std::vector<double> x = {1, 0, 1, 0, 1, 0, 1, 0, 1, 0};
  const Interval a = bootstrap_mean_interval(x), b = bootstrap_mean_interval(x);
  EXPECT_DOUBLE_EQ(a.lo, 0.2);
  EXPECT_DOUBLE_EQ(a.hi, 0.8);
  EXPECT_EQ(a.lo, b.lo);  // bit-identical run to run
  EXPECT_EQ(a.hi, b.hi);
  const std::vector<double> constant(7, 0.25);
  EXPECT_DOUBLE_EQ(bootstrap_mean_interval(constant).lo, 0.25);
  EXPECT_DOUBLE_EQ(bootstrap_mean_interval(constant).hi, 0.25);
  // A fractional sample: the interval holds the mean and is bit-identical.
  const std::vector<double> f = {0.1, 0.4, 0.35, 0.8, 0.9, 0.5, 0.55, 0.2, 0.7, 0.65};
  const Interval c = bootstrap_mean_interval(f);
  EXPECT_LT(c.lo, 0.515);
  EXPECT_GT(c.hi, 0.515);
  EXPECT_GT(c.lo, 0.3);
  EXPECT_LT(c.hi, 0.7);
  EXPECT_EQ(c.lo, bootstrap_mean_interval(f).lo);
  // The ratio of paired sums: equal sums give exactly 1 in every resample.
  EXPECT_DOUBLE_EQ(bootstrap_ratio_interval(f, f).lo, 1.0);
  EXPECT_DOUBLE_EQ(bootstrap_ratio_interval(f, f).hi, 1.0);
  // A denominator of zeros: no resample has a ratio.
  const std::vector<double> den(f.size(), 0.0);
  EXPECT_TRUE(std::isnan(bootstrap_ratio_interval(f, den).lo));
  // One value is no basis for an interval (it would have zero width).
  const std::vector<double> single = {0.4};
  EXPECT_TRUE(std::isnan(bootstrap_mean_interval(single).lo));
  EXPECT_TRUE(std::isnan(bootstrap_ratio_interval(single, single).hi));
  // One score in [0, 1] gets Wilson's interval at its value (estimate_mean),
  // as one pass/fail score does; one outside [0, 1] gets none.
  EXPECT_DOUBLE_EQ(estimate_mean(single).ci.lo, wilson_interval_at(0.4, 1).lo);
  EXPECT_DOUBLE_EQ(estimate_mean(single).ci.hi, wilson_interval_at(0.4, 1).hi);
  EXPECT_EQ(format_estimate(estimate_mean(std::vector<double>{1.5}).mean,
                            estimate_mean(std::vector<double>{1.5}).ci),
            "1.500");
  EXPECT_DOUBLE_EQ(estimate_mean(std::vector<double>{1.0}).ci.lo, wilson_interval(1, 1).lo);
}

TEST(Stats, FractionalScoresInZeroOneGetAtLeastWilsonsInterval) {
  // Wilson at a mean is Wilson at successes / n where that is whole.
  EXPECT_DOUBLE_EQ(wilson_interval_at(0.7, 10).lo, wilson_interval(7, 10).lo);
  EXPECT_DOUBLE_EQ(wilson_interval_at(0.7, 10).hi, wilson_interval(7, 10).hi);
  // Eight instances that each score 1/3 (RULER's fwe: one of three words):
  // the bootstrap alone has no width; the estimate is Wilson's at 1/3, n = 8.
  const std::vector<double> thirds(8, 1.0 / 3.0);
  const Estimate t = estimate_mean(thirds);
  EXPECT_EQ(t.kind, ScoreKind::Fractional);
  EXPECT_DOUBLE_EQ(bootstrap_mean_interval(thirds).lo, bootstrap_mean_interval(thirds).hi);
  EXPECT_DOUBLE_EQ(t.ci.lo, wilson_interval_at(1.0 / 3.0, 8).lo);
  EXPECT_DOUBLE_EQ(t.ci.hi, wilson_interval_at(1.0 / 3.0, 8).hi);
  EXPECT_NEAR(t.ci.lo, 0.114, 0.001);
  EXPECT_NEAR(t.ci.hi, 0.661, 0.001);
  // Two instances, 0 and 0.25: the bootstrap says [0, 0.25]; two pass/fail
  // instances could not be read that narrowly, nor can these.
  const std::vector<double> two = {0.0, 0.25};
  EXPECT_DOUBLE_EQ(bootstrap_mean_interval(two).hi, 0.25);
  EXPECT_DOUBLE_EQ(estimate_mean(two).ci.hi, wilson_interval_at(0.125, 2).hi);
  EXPECT_GT(estimate_mean(two).ci.hi, 0.5);
  // A wide sample: each end is the farther of the two intervals' ends.
  const std::vector<double> f = {0.0, 1.0, 0.0, 1.0, 0.5, 0.0, 1.0, 1.0, 0.0, 0.25};
  const Estimate w = estimate_mean(f);
  const Interval b = bootstrap_mean_interval(f), wi = wilson_interval_at(w.mean, 10);
  EXPECT_DOUBLE_EQ(w.ci.lo, std::min(b.lo, wi.lo));
  EXPECT_DOUBLE_EQ(w.ci.hi, std::max(b.hi, wi.hi));
  // Scores outside [0, 1] (perplexity ratios) keep the bootstrap alone.
  const std::vector<double> ratios = {1.02, 1.05, 1.03, 1.10, 1.04};
  EXPECT_DOUBLE_EQ(estimate_mean(ratios).ci.lo, bootstrap_mean_interval(ratios).lo);
  EXPECT_DOUBLE_EQ(estimate_mean(ratios).ci.hi, bootstrap_mean_interval(ratios).hi);
}

TEST(Stats, PairedBootstrapTest) {
  const std::vector<double> base = {0.9, 0.8, 0.7, 0.6, 0.5, 0.9, 0.8, 0.7, 0.6, 0.5};
  EXPECT_DOUBLE_EQ(paired_bootstrap_p(base, base), 1.0);  // identical runs
  // Every instance 0.1 lower: every resampled mean is -0.1, p = 1 / (B + 1).
  std::vector<double> lower = base;
  for (double& v : lower) v -= 0.1;
  EXPECT_DOUBLE_EQ(paired_bootstrap_p(base, lower), 1.0 / (kBootstrapResamples + 1));
  // k of 10 instances losing 0.5: a resampled mean is >= 0 only when it
  // draws none of them, with probability ((10 - k) / 10)^10, so p is about
  // that: k = 1 -> 0.35, k = 4 -> 0.006.
  std::vector<double> one = base, four = base;
  one[0] -= 0.5;
  for (int i = 0; i < 4; ++i) four[i] -= 0.5;
  EXPECT_NEAR(paired_bootstrap_p(base, one), 0.349, 0.02);
  EXPECT_NEAR(paired_bootstrap_p(base, four), 0.0061, 0.002);
  EXPECT_EQ(paired_bootstrap_p(base, four), paired_bootstrap_p(base, four));
  EXPECT_DOUBLE_EQ(paired_bootstrap_p(four, base), 1.0);  // one-sided: a rise is no drop
}

TEST(Stats, FractionalChangesNeedTheBootstrapAndTheSignTest) {
  // One instance: the bootstrap alone is certain (every resample is that
  // instance), the sign test knows one instance says nothing.
  const std::vector<double> b1 = {0.8}, n1 = {0.3};
  EXPECT_DOUBLE_EQ(paired_bootstrap_p(b1, n1), 1.0 / (kBootstrapResamples + 1));
  EXPECT_DOUBLE_EQ(paired_sign_test_p(b1, n1), 0.25);
  EXPECT_DOUBLE_EQ(paired_p(ScoreKind::Fractional, b1, n1), 0.25);
  // Nine instances fall by 0.1, one rises by 0.8: the sign test alone would
  // call it (9 to 1, p = 0.0059), the bootstrap sees a mean change of -0.01
  // carried by one instance: a resampled mean is >= 0 when it draws the
  // rising one at least twice, P = 1 - 0.9^10 - 0.9^9 = 0.264.
  const std::vector<double> base(10, 0.1);
  std::vector<double> next(10, 0.0);
  next[9] = 0.9;
  EXPECT_NEAR(paired_sign_test_p(base, next), 0.0058594, 1e-6);  // (1 + 10/2) / 1024
  const double boot = paired_bootstrap_p(base, next);
  EXPECT_NEAR(boot, 0.264, 0.02);
  EXPECT_DOUBLE_EQ(paired_p(ScoreKind::Fractional, base, next), boot);
  EXPECT_FALSE(significant(paired_p(ScoreKind::Fractional, base, next)));
  // On 0/1 scores paired_p is McNemar.
  const std::vector<double> pass(10, 1.0);
  std::vector<double> four = pass;
  for (int i = 0; i < 4; ++i) four[i] = 0.0;
  EXPECT_DOUBLE_EQ(paired_p(ScoreKind::PassFail, pass, four), 0.03125);
  EXPECT_DOUBLE_EQ(paired_p(ScoreKind::Fractional, pass, four), 0.03125);
  EXPECT_DOUBLE_EQ(paired_p(ScoreKind::PassFail, four, pass), 0.96875);  // the rise
}

TEST(Stats, SmallestDetectableDrop) {
  // Mid-p McNemar needs 4 discordant pairs, all one way (p = 2^-(k+1)).
  EXPECT_EQ(min_detectable_flips(ScoreKind::PassFail, 10), 4);
  EXPECT_DOUBLE_EQ(min_detectable_drop(ScoreKind::PassFail, 10), 0.4);
  EXPECT_DOUBLE_EQ(min_detectable_drop(ScoreKind::PassFail, 100), 0.04);
  EXPECT_EQ(min_detectable_flips(ScoreKind::PassFail, 4), 4);
  EXPECT_EQ(min_detectable_flips(ScoreKind::PassFail, 3), 0);  // nothing can be
  EXPECT_TRUE(std::isnan(min_detectable_drop(ScoreKind::PassFail, 3)));
  // Fractional scores: the sign test binds (the bootstrap alone would take
  // 3 of 10, and 1 of 1).
  EXPECT_EQ(min_detectable_flips(ScoreKind::Fractional, 10), 4);
  EXPECT_DOUBLE_EQ(min_detectable_drop(ScoreKind::Fractional, 10), 0.4);
  EXPECT_EQ(min_detectable_flips(ScoreKind::Fractional, 1), 0);
  EXPECT_EQ(min_detectable_flips(ScoreKind::Fractional, 3), 0);
  // The figures agree with the tests themselves on that case: the bootstrap
  // alone at 2 of 10 (p = (1 + B 0.8^10) / (B + 1) = 0.107) and 3 of 10
  // (0.028), the combined test at 3 and 4 of 10.
  std::vector<double> base(10, 1.0);
  std::vector<std::vector<double>> lose(5, base);
  for (int k = 0; k < 5; ++k)
    for (int i = 0; i < k; ++i) lose[k][i] = 0.0;
  EXPECT_FALSE(significant(paired_bootstrap_p(base, lose[2])));
  EXPECT_TRUE(significant(paired_bootstrap_p(base, lose[3])));
  EXPECT_FALSE(significant(paired_p(ScoreKind::Fractional, base, lose[3])));
  EXPECT_TRUE(significant(paired_p(ScoreKind::Fractional, base, lose[4])));
}

}  // namespace
}  // namespace kvbench::stats
