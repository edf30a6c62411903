#include "harness/report/paired_ratio.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include <boost/math/distributions/normal.hpp>

namespace kvbench::stats {
namespace {

constexpr int kGoldenSteps = 64;     // each shrinks the bracket by 0.618: 1e-13 of it
constexpr int kBisectionSteps = 80;  // on log theta

// Maximum of a concave f on [lo, hi] (its argument returned).
template <class F>
double golden_max(F f, double lo, double hi) {
  const double r = (std::sqrt(5.0) - 1.0) / 2.0;
  double a = lo, b = hi;
  double x1 = b - r * (b - a), x2 = a + r * (b - a);
  double f1 = f(x1), f2 = f(x2);
  for (int i = 0; i < kGoldenSteps; ++i) {
    if (f1 < f2) {
      a = x1;
      x1 = x2;
      f1 = f2;
      x2 = a + r * (b - a);
      f2 = f(x2);
    } else {
      b = x2;
      x2 = x1;
      f2 = f1;
      x1 = b - r * (b - a);
      f1 = f(x1);
    }
  }
  return (a + b) / 2;
}

// n log p, 0 for no count, -inf for a count on an impossible cell.
double term(int64_t n, double p) {
  if (n == 0) return 0.0;
  return p > 0 ? static_cast<double>(n) * std::log(p) : -std::numeric_limits<double>::infinity();
}

}  // namespace

CellProbabilities restricted_mle(const PairedCounts& c, double theta) {
  assert(theta > 0);
  // Free parameters p11, p01; p10 = (theta - 1) p11 + theta p01 >= 0 and
  // p00 = 1 - theta p11 - (1 + theta) p01 >= 0.
  const auto cells = [&](double p11, double p01) {
    return CellProbabilities{p11, (theta - 1) * p11 + theta * p01, p01,
                             1 - theta * p11 - (1 + theta) * p01};
  };
  const auto loglik = [&](const CellProbabilities& p) {
    return term(c.both, p.p11) + term(c.first_only, p.p10) + term(c.second_only, p.p01) +
           term(c.neither, p.p00);
  };
  // The largest p11 the constraints allow at this p01.
  const auto p11_max = [&](double p01) {
    double hi = (1 - (1 + theta) * p01) / theta;
    if (theta < 1) hi = std::min(hi, theta * p01 / (1 - theta));
    return std::max(0.0, hi);
  };
  const auto best_p11 = [&](double p01) {
    return golden_max([&](double p11) { return loglik(cells(p11, p01)); }, 0.0, p11_max(p01));
  };
  const double p01 =
      golden_max([&](double q) { return loglik(cells(best_p11(q), q)); }, 0.0, 1.0 / (1 + theta));
  return cells(best_p11(p01), p01);
}

double paired_ratio_score(const PairedCounts& c, double theta) {
  const double n = static_cast<double>(c.both + c.first_only + c.second_only + c.neither);
  const double p1 = static_cast<double>(c.both + c.first_only) / n;
  const double p2 = static_cast<double>(c.both + c.second_only) / n;
  const CellProbabilities p = restricted_mle(c, theta);
  const double numerator = p1 - theta * p2;
  const double variance = theta * ((theta - 1) * p.p11 + (1 + theta) * p.p01) / n;
  if (!(variance > 0)) {
    if (numerator == 0) return 0.0;
    return numerator > 0 ? std::numeric_limits<double>::infinity()
                         : -std::numeric_limits<double>::infinity();
  }
  return numerator / std::sqrt(variance);
}

Interval paired_ratio_interval(std::span<const double> first, std::span<const double> second) {
  assert(first.size() == second.size());
  PairedCounts c;
  for (size_t i = 0; i < first.size(); ++i) {
    assert((first[i] == 0 || first[i] == 1) && (second[i] == 0 || second[i] == 1));
    const bool a = first[i] == 1, b = second[i] == 1;
    (a && b ? c.both : a ? c.first_only : b ? c.second_only : c.neither) += 1;
  }
  if (c.both + c.second_only == 0) return {};  // the ratio is undefined
  const double z = boost::math::quantile(boost::math::normal(), 1.0 - kAlpha / 2);
  const double estimate =
      static_cast<double>(c.both + c.first_only) / static_cast<double>(c.both + c.second_only);
  // T falls as theta grows: the ends are where it crosses +z and -z, found by
  // bisection on log theta between the estimate and 1e-12 or 1e12.
  // `from` is on the estimate's side of `level`, `to` beyond it.
  const auto crossing = [&](double from, double to, double level) {
    double a = std::log(from), b = std::log(to);
    const bool above = paired_ratio_score(c, from) > level;
    for (int i = 0; i < kBisectionSteps; ++i) {
      const double m = (a + b) / 2;
      ((paired_ratio_score(c, std::exp(m)) > level) == above ? a : b) = m;
    }
    return std::exp((a + b) / 2);
  };
  constexpr double kSmallest = 1e-12, kLargest = 1e12;
  Interval ci;
  ci.lo = estimate == 0 ? 0.0 : crossing(estimate, kSmallest, z);
  ci.hi = paired_ratio_score(c, kLargest) > -z
              ? std::numeric_limits<double>::infinity()
              : crossing(std::max(estimate, kSmallest), kLargest, -z);
  return ci;
}

}  // namespace kvbench::stats
