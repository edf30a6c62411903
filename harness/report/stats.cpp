#include "harness/report/stats.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <vector>

#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/normal.hpp>

#include "datasets/rng.h"

namespace kvbench::stats {
namespace {

// The normal quantile the 95% intervals use (1.959964...).
double z_two_sided() {
  static const double z =
      boost::math::quantile(boost::math::normal_distribution<double>(0.0, 1.0), 1.0 - kAlpha / 2);
  return z;
}

// The ends of a percentile interval from m sorted statistics: the k-th
// smallest and the k-th largest, k = floor((m + 1) * kAlpha / 2) (250 of 9999).
Interval percentile_interval(std::vector<double>& v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const size_t m = v.size();
  const size_t k = std::max<size_t>(1, static_cast<size_t>(std::floor((m + 1) * (kAlpha / 2))));
  return {v[std::min(k - 1, m - 1)], v[m - std::min(k, m)]};
}

// The mean of each of kBootstrapResamples resamples of x, drawn with
// replacement from the one fixed-seed stream, summed in draw order.
//   x: [n], n > 0  ->  [kBootstrapResamples]
std::vector<double> resampled_means(std::span<const double> x) {
  assert(!x.empty());
  datasets::Rng rng(kBootstrapSeed);
  const uint64_t n = x.size();
  std::vector<double> means(kBootstrapResamples);
  for (double& m : means) {
    double sum = 0.0;
    for (uint64_t i = 0; i < n; ++i) sum += x[rng.below(n)];
    m = sum / static_cast<double>(n);
  }
  return means;
}

}  // namespace

ScoreKind score_kind(std::span<const double> scores) {
  for (double s : scores)
    if (s != 0.0 && s != 1.0) return ScoreKind::Fractional;
  return ScoreKind::PassFail;
}

const char* interval_method(ScoreKind kind, bool wilson_floor) {
  if (kind == ScoreKind::PassFail) return "Wilson";
  return wilson_floor ? "bootstrap+Wilson" : "bootstrap";
}

const char* paired_test_name(ScoreKind kind) {
  return kind == ScoreKind::PassFail ? "McNemar" : "bootstrap+sign";
}

Interval wilson_interval(int64_t successes, int64_t n) {
  assert(n > 0 && successes >= 0 && successes <= n);
  return wilson_interval_at(static_cast<double>(successes) / static_cast<double>(n), n);
}

Interval wilson_interval_at(double p, int64_t n) {
  assert(n > 0 && p >= 0.0 && p <= 1.0);
  const double z = z_two_sided(), nn = static_cast<double>(n);
  const double denom = 1.0 + z * z / nn;
  const double centre = (p + z * z / (2 * nn)) / denom;
  const double half = z / denom * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn));
  // At 0 of n and n of n the formula's end is 0 or 1 up to rounding: clamp.
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

Interval bootstrap_mean_interval(std::span<const double> x) {
  if (x.size() < 2) return {};
  std::vector<double> means = resampled_means(x);
  return percentile_interval(means);
}

double median(std::vector<double> x) {
  x.erase(std::remove_if(x.begin(), x.end(), [](double v) { return std::isnan(v); }), x.end());
  if (x.empty()) return NAN;
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

Interval bootstrap_median_interval(std::span<const double> x) {
  if (x.size() < 3) return {};
  datasets::Rng rng(kBootstrapSeed);
  const uint64_t n = x.size();
  std::vector<double> medians(kBootstrapResamples), draw(n);
  for (double& m : medians) {
    for (uint64_t i = 0; i < n; ++i) draw[i] = x[rng.below(n)];
    m = median(draw);
  }
  return percentile_interval(medians);
}

Interval bootstrap_ratio_interval(std::span<const double> num, std::span<const double> den) {
  assert(num.size() == den.size());
  if (num.size() < 2) return {};
  datasets::Rng rng(kBootstrapSeed);
  const uint64_t n = num.size();
  std::vector<double> ratios;
  ratios.reserve(kBootstrapResamples);
  for (int r = 0; r < kBootstrapResamples; ++r) {
    double sn = 0.0, sd = 0.0;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t j = rng.below(n);  // one draw picks the instance for both sums
      sn += num[j];
      sd += den[j];
    }
    if (sd != 0.0) ratios.push_back(sn / sd);
  }
  if (2 * ratios.size() < static_cast<size_t>(kBootstrapResamples)) return {};
  return percentile_interval(ratios);
}

Estimate estimate_mean(std::span<const double> scores) {
  Estimate e;
  e.n = static_cast<int64_t>(scores.size());
  e.kind = score_kind(scores);
  if (scores.empty()) return e;
  double sum = 0.0;
  for (double s : scores) sum += s;
  e.mean = sum / static_cast<double>(e.n);
  if (e.kind == ScoreKind::PassFail) {
    int64_t passed = 0;
    for (double s : scores) passed += s == 1.0;
    e.ci = wilson_interval(passed, e.n);
  } else {
    e.ci = bootstrap_mean_interval(scores);
    // Scores in [0, 1]: at least the Wilson interval of their mean (see
    // estimate_mean's comment). NaN from the bootstrap (one score) keeps
    // Wilson's alone, as a single pass/fail score has.
    const bool bounded =
        std::all_of(scores.begin(), scores.end(), [](double s) { return s >= 0.0 && s <= 1.0; });
    if (bounded) {
      e.wilson_floor = true;
      const Interval w = wilson_interval_at(e.mean, e.n);
      e.ci = std::isnan(e.ci.lo) ? w : Interval{std::min(e.ci.lo, w.lo), std::max(e.ci.hi, w.hi)};
    }
  }
  return e;
}

double mcnemar_midp_drop_p(int64_t b, int64_t c) {
  assert(b >= 0 && c >= 0);
  if (b + c == 0) return 1.0;
  const boost::math::binomial_distribution<double> discordant(static_cast<double>(b + c), 0.5);
  const double bb = static_cast<double>(b);
  // P(X > b) + P(X = b) / 2; cdf(complement(d, b)) is P(X > b).
  return boost::math::cdf(boost::math::complement(discordant, bb)) +
         0.5 * boost::math::pdf(discordant, bb);
}

double paired_bootstrap_p(std::span<const double> base, std::span<const double> next) {
  assert(base.size() == next.size() && !base.empty());
  std::vector<double> diff(base.size());  // [n] next - base, per instance
  for (size_t i = 0; i < diff.size(); ++i) diff[i] = next[i] - base[i];
  // Resamples that show no drop: the evidence against one.
  int64_t at_least_zero = 0;
  for (double m : resampled_means(diff)) at_least_zero += m >= 0.0;
  return std::min(1.0, static_cast<double>(1 + at_least_zero) / (kBootstrapResamples + 1));
}

double paired_sign_test_p(std::span<const double> base, std::span<const double> next) {
  assert(base.size() == next.size());
  int64_t fell = 0, rose = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    fell += next[i] < base[i];
    rose += next[i] > base[i];
  }
  return mcnemar_midp_drop_p(fell, rose);
}

double paired_permutation_p(std::span<const double> d) {
  assert(!d.empty());
  double observed = 0.0;
  for (double x : d) observed += x;
  // Sums of the same terms with other signs can differ from the observed one
  // by rounding alone; a relative margin counts those draws as ties.
  const double bar = std::fabs(observed) * (1.0 - 1e-12);
  if (bar == 0.0) return 1.0;
  datasets::Rng rng(kBootstrapSeed);
  int64_t as_large = 0;
  for (int r = 0; r < kBootstrapResamples; ++r) {
    double sum = 0.0;
    for (double x : d) sum += rng.below(2) ? x : -x;
    as_large += std::fabs(sum) >= bar;
  }
  return static_cast<double>(1 + as_large) / (kBootstrapResamples + 1);
}

PairedDifference paired_difference(std::span<const double> d) {
  PairedDifference r;
  r.n = static_cast<int64_t>(d.size());
  if (d.empty()) return r;
  double sum = 0;
  for (double x : d) sum += x;
  r.delta = sum / static_cast<double>(d.size());
  r.ci = bootstrap_mean_interval(d);
  r.p = paired_permutation_p(d);
  const bool excludes_zero = !std::isnan(r.ci.lo) && (r.ci.lo > 0 || r.ci.hi < 0);
  r.differ = significant(r.p) && excludes_zero;
  r.split = significant(r.p) != excludes_zero;
  return r;
}

int64_t sign_flip_min_flips(int64_t n) {
  for (int64_t k = 1; k <= n; ++k)
    if (std::ldexp(2.0, -static_cast<int>(std::min<int64_t>(k, 1000))) < kAlpha) return k;
  return 0;
}

std::string format_p(double p) {
  const double floor = 1.0 / (kBootstrapResamples + 1);
  if (p <= floor * (1 + 1e-9)) return "≤ " + format_estimate(floor, {}, "%.3g");
  return format_estimate(p, {}, "%.3g");
}

double paired_p(ScoreKind kind, std::span<const double> base, std::span<const double> next) {
  assert(base.size() == next.size() && !base.empty());
  // On 0/1 scores the sign test counts exactly McNemar's discordant pairs.
  if (kind == ScoreKind::PassFail) return paired_sign_test_p(base, next);
  return std::max(paired_bootstrap_p(base, next), paired_sign_test_p(base, next));
}

int64_t min_detectable_flips(ScoreKind kind, int64_t n) {
  for (int64_t k = 1; k <= n; ++k) {
    double p = mcnemar_midp_drop_p(k, 0);  // McNemar, or the sign test
    if (kind == ScoreKind::Fractional) {
      // The expected p of paired_bootstrap_p on k differences of -1 and n - k
      // of 0: every resample's mean is <= 0, and it is >= 0 (= 0) only when
      // none of the k is drawn.
      const double none_drawn =
          std::pow(static_cast<double>(n - k) / static_cast<double>(n), static_cast<double>(n));
      p = std::max(
          p, std::min(1.0, (1.0 + kBootstrapResamples * none_drawn) / (kBootstrapResamples + 1)));
    }
    if (significant(p)) return k;
  }
  return 0;
}

double min_detectable_drop(ScoreKind kind, int64_t n) {
  const int64_t k = min_detectable_flips(kind, n);
  return k ? static_cast<double>(k) / static_cast<double>(n) : NAN;
}

std::string format_estimate(double mean, Interval ci, const char* format) {
  if (std::isnan(mean)) return "–";
  const auto one = [&](double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, x);
    return std::string(buf);
  };
  if (std::isnan(ci.lo)) return one(mean);
  return one(mean) + " [" + one(ci.lo) + ", " + one(ci.hi) + "]";
}

}  // namespace kvbench::stats
