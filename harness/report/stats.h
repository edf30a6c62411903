// The statistics behind every score kvbench prints: a 95% interval for a mean
// score over instances, and the paired tests `compare` uses before it calls a
// drop a regression. A benchmark cell is one instance, and a run has few of
// them (the quick experiment: 2 to 4 per task), so a score without its
// uncertainty invites reading noise as an effect.
//
// Two kinds of score, told apart by the data (score_kind):
//   pass/fail   every score is exactly 0 or 1 (the exact, contains and
//               numeric graders): Wilson score interval for the mean;
//               one-sided mid-p McNemar test on the discordant pairs for a
//               paired drop
//   fractional  anything else (all_values, per_query, the perplexity ratio):
//               percentile bootstrap over instances for the mean, widened
//               to at least the Wilson interval of that mean when every
//               score is in [0, 1] (estimate_mean); one-sided
//               paired bootstrap over instances, held in check by the
//               one-sided mid-p sign test, for a paired drop (paired_p says why)
//
// The paired tests are one-sided: a regression gate asks whether the score
// DROPPED, not whether it changed. A two-sided test spends half its level on
// improvements the gate never acts on. They use the mid-p (Fagerland,
// Lydersen & Laake, BMC Med Res Methodol 13:91, 2013: the exact conditional
// McNemar test is so conservative that its true level is far below the
// nominal one at small n; the mid-p keeps close to the nominal level and
// they recommend it).
//
// Everything is deterministic: the bootstrap draws come from one SplitMix64
// stream (datasets/rng.h, portable, unlike std::uniform_int_distribution)
// restarted at a fixed seed on every call, and sums run in index order, so the
// same scores give bit-identical intervals and p-values on every run and
// machine.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kvbench::stats {

// Significance level: every interval is the two-sided (1 - kAlpha) = 95% one,
// and a paired drop is significant when its one-sided p < kAlpha.
inline constexpr double kAlpha = 0.05;
// Bootstrap resamples. With B = 9999, (B + 1) * kAlpha / 2 = 250 is a whole
// number: the interval's ends are the 250th smallest and the 250th largest of
// the B resampled statistics (Davison & Hinkley's choice of B).
inline constexpr int kBootstrapResamples = 9999;
// The seed every bootstrap starts from ("kvbench" in ASCII).
inline constexpr uint64_t kBootstrapSeed = 0x6b7662656e6368ull;

struct Interval {
  double lo = NAN, hi = NAN;  // NaN when undefined (no data)
};

enum class ScoreKind { PassFail, Fractional };

// PassFail when every score is exactly 0 or 1 (and for no scores at all).
ScoreKind score_kind(std::span<const double> scores);
// The interval method of a kind, for legends: "Wilson" (pass/fail),
// "bootstrap" (fractional), "bootstrap+Wilson" (fractional in [0, 1]: the
// bootstrap widened to at least Wilson's, estimate_mean; wilson_floor).
const char* interval_method(ScoreKind kind, bool wilson_floor);
// "McNemar" or "bootstrap+sign": the paired test of that kind (paired_p).
const char* paired_test_name(ScoreKind kind);

// Wilson score interval at 95% for `successes` of `n` (0 <= successes <= n,
// n > 0): p~ = (p + z²/2n) / (1 + z²/n) ± z/(1 + z²/n) · sqrt(p(1-p)/n + z²/4n²),
// z the normal 97.5% quantile. Unlike p ± z·sqrt(p(1-p)/n) it stays inside
// [0, 1] and is not empty at 0 of n or n of n. 7 of 10: [0.397, 0.892].
Interval wilson_interval(int64_t successes, int64_t n);
// The same at a mean p in [0, 1] of n instances (p n need not be whole).
Interval wilson_interval_at(double p, int64_t n);

// Percentile bootstrap interval at 95% for the mean of x:
// kBootstrapResamples resamples of x.size() draws with replacement. NaN for
// fewer than 2 values (one value would give a zero-width interval, a
// certainty the data cannot support).
Interval bootstrap_mean_interval(std::span<const double> x);

// The median of x's non-NaN values (the mean of the two middle values for
// an even count); NaN when there are none.
double median(std::vector<double> x);

// The same for the median of x (median() of each resample): NaN for fewer
// than 3 values.
Interval bootstrap_median_interval(std::span<const double> x);

// Percentile bootstrap interval at 95% for sum(num) / sum(den) over paired
// instances (num[i] and den[i] belong to instance i; equal sizes > 0).
// Resamples whose sum(den) is 0 have no ratio and are left out; NaN when
// fewer than half of the resamples have one, and for fewer than 2 instances.
// (Context Retention: a policy's score relative to the full cache's on the
// same instances.)
Interval bootstrap_ratio_interval(std::span<const double> num, std::span<const double> den);

// A mean score over n instances with its 95% interval, by the scores' kind:
// pass/fail, Wilson's; fractional, the percentile bootstrap, and for scores
// in [0, 1] the hull of that and Wilson's interval at the same mean and n.
// Why: a score in [0, 1] with mean p has variance at most p (1 - p), a
// pass/fail score's, so Wilson's interval is what n instances can support
// whatever the scores' spread; the bootstrap reads the spread off the
// sample, and few instances, or instances that happen to agree, understate
// it (8 fwe instances that each score 1/3 would give [0.333, 0.333], two
// instances 0.125 [0.000, 0.250], where two pass/fail ones give [0, 0.658]).
// With many instances of real spread the two agree closely. One fractional
// score in [0, 1] gets Wilson's; one outside it (a perplexity ratio), none.
struct Estimate {
  int64_t n = 0;
  double mean = NAN;
  Interval ci;
  ScoreKind kind = ScoreKind::PassFail;
  bool wilson_floor = false;  // fractional, every score in [0, 1]: ci is at least Wilson's
};
Estimate estimate_mean(std::span<const double> scores);

// One-sided mid-p McNemar test for a drop: b instances passed in base only
// (went 1 -> 0), c in new only (0 -> 1). Under "no change" each of the b + c
// discordant pairs goes either way with probability 1/2, so with X ~
// Binomial(b + c, 1/2) (Boost.Math) p = P(X > b) + P(X = b) / 2: the exact
// one-sided p-value P(X >= b) with only half the weight of the observed
// outcome. 1 when b + c = 0 (nothing discordant: no evidence either way).
// b=1, c=0: 0.25; b=3: 0.0625; b=4: 0.03125 (the first that is
// significant); b=0, c=4: 0.96875 (a rise is no drop).
double mcnemar_midp_drop_p(int64_t b, int64_t c);

// One-sided paired bootstrap test for a drop, for scores of the same
// instances in two runs (equal sizes > 0): the differences d[i] = next[i] -
// base[i] are resampled kBootstrapResamples times; with G the number of
// resampled means >= 0 (resamples showing no drop), p = (1 + G) / (B + 1)
// (the +1 keeps a Monte Carlo p-value from reading 0). p < kAlpha exactly
// when the 95% one-sided upper bound of the mean difference lies below 0,
// give or take one resample. Identical runs: p = 1.
double paired_bootstrap_p(std::span<const double> base, std::span<const double> next);

// One-sided mid-p sign test for a drop in paired scores (equal sizes):
// McNemar's test on the directions of the changes,
// mcnemar_midp_drop_p(#fell, #rose); instances whose score did not change are
// left out. On pass/fail scores it is McNemar.
double paired_sign_test_p(std::span<const double> base, std::span<const double> next);

// Two-sided paired sign-flip (randomization) test on the mean of paired
// differences d (size > 0): under "no difference" each d[i] is as likely
// to have the other sign, so kBootstrapResamples draws flip each sign by a
// fair coin (one fixed-seed stream); with G the draws whose |sum| is at
// least the observed |sum|, p = (1 + G) / (B + 1). It tests the same
// statistic the bootstrap interval of the mean is about (unlike the sign
// test, which counts directions and drops ties), so the two mostly agree;
// all-zero d: p = 1.
double paired_permutation_p(std::span<const double> d);

// The mean of paired differences d[i] = a_i - b_i (one per instance both
// have) judged two-sided: its 95% bootstrap interval
// (bootstrap_mean_interval) and the sign-flip p on the same mean
// (paired_permutation_p). A difference is called one (differ) when p < kAlpha
// and the interval excludes 0; split when only one of the two says so (the
// reader sees "unsettled", not a side taken). Empty d: n = 0, all NaN.
struct PairedDifference {
  int64_t n = 0;
  double delta = NAN;  // mean of d
  Interval ci;
  double p = NAN;
  bool differ = false;
  bool split = false;
};
PairedDifference paired_difference(std::span<const double> d);

// The fewest of n paired instances that must move one way (by the same
// amount, the rest unchanged) before paired_difference can call it a
// difference: the exact two-sided sign-flip p of k such instances is
// 2 / 2^k, below kAlpha from k = 6 (n = 104: 6 instances, 0.058). 0 when
// n < 6: no difference of n instances can be called.
int64_t sign_flip_min_flips(int64_t n);

// A Monte Carlo p-value as the tables print it: three significant digits,
// or "≤ 0.0001" when no draw was as extreme as the data (the p is then only
// known to be at most its floor, 1 / (kBootstrapResamples + 1)).
std::string format_p(double p);

// The one-sided p-value `compare` judges a paired drop by (equal sizes > 0):
//   pass/fail   mid-p McNemar on the discordant pairs
//   fractional  max(paired bootstrap p, sign test p): the drop is
//               significant only when both tests call it so (an
//               intersection-union test, whose p-value is the larger one).
// Why not the bootstrap alone: it takes the observed differences for the
// whole population, so it is surest where it knows least. One instance, or
// instances that all fell by the same amount, give p = 1 / (B + 1) = 0.0001
// for any drop; 3 of 10 instances losing their score give p = 0.03 where
// the mid-p sign test says 0.0625. The sign test asks how many instances
// fell rather than by how much; the bootstrap keeps its say on size (nine
// instances falling by 0.1 while one rises by 0.8 is a sign-test p of 0.006
// but a bootstrap p of 0.26).
// Swapping base and next asks whether the score rose.
double paired_p(ScoreKind kind, std::span<const double> base, std::span<const double> next);

// Is p small enough to call a paired drop significant (p < kAlpha)?
inline bool significant(double p) { return p < kAlpha; }

// The smallest drop a paired comparison of n instances could call
// significant (paired_p), as a share of n. Both kinds use the same best case
// for detection: k of the n instances lose their whole score (1 -> 0), the
// other n - k are unchanged; the figure is k_min / n for the smallest such k
// the kind's test calls significant:
//   pass/fail   mid-p McNemar on b = k, c = 0: p = 2^-(k+1), so k_min = 4
//               whatever n (n = 10: 0.4; n = 100: 0.04); below n = 4, no drop
//               can be significant
//   fractional  the larger of that same p (the sign test) and the paired
//               bootstrap's expected p on k differences of -1 and n - k of 0:
//               a resample's mean is >= 0 only when it draws none of the k,
//               with probability ((n - k)/n)^n, so p = min(1, (1 + B ·
//               ((n - k)/n)^n) / (B + 1)) (k_min 3 alone at n = 10). The sign
//               test binds: k_min = 4 as for pass/fail.
// Returns k_min (0 when no k <= n is significant).
int64_t min_detectable_flips(ScoreKind kind, int64_t n);
// min_detectable_flips / n; NaN when no drop of n instances can be significant.
double min_detectable_drop(ScoreKind kind, int64_t n);

// "0.700 [0.397, 0.892]": the mean and its interval's ends each in printf
// `format` (default three decimals; "%+.3f" for a difference); the mean
// alone without an interval, "–" for no data.
std::string format_estimate(double mean, Interval ci, const char* format = "%.3f");

}  // namespace kvbench::stats
