// LagKV (policies/scorers/lagkv.cpp): the priorities against the paper's
// formula written out here (partitions in position order, each scaled by
// the next one's per-channel range, spread over channels, softmax, ranks),
// and the short-context fallback to sinks then recency.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "policies/policy_spec.h"
#include "policies/registry.h"
#include "tests/support/fake_score_context.h"
#include "tests/support/scorer_priorities.h"

namespace kvbench {
namespace {

constexpr int kD = 6;

std::vector<float> priorities_of(const std::string& spec, test::FakeScoreContext& cx,
                                 const std::vector<int32_t>& pos) {
  return test::scorer_priorities(spec, cx, pos, static_cast<int32_t>(pos.size()) / 2);
}

// Softmax over a partition of its tokens' channel spreads against `ref`.
std::vector<double> spread_scores(const std::vector<float>& rows, const std::vector<int>& part,
                                  const std::vector<int>& ref) {
  std::vector<double> out;
  for (int t : part) {
    std::vector<double> z(kD);
    for (int c = 0; c < kD; ++c) {
      double lo = 1e30, hi = -1e30;
      for (int r : ref)
        lo = std::min(lo, double{rows[r * kD + c]}), hi = std::max(hi, double{rows[r * kD + c]});
      z[c] = (rows[t * kD + c] - lo) / (hi - lo);
    }
    const double mean = std::accumulate(z.begin(), z.end(), 0.0) / kD;
    double var = 0.0;
    for (double x : z) var += (x - mean) * (x - mean);
    out.push_back(std::sqrt(var / (kD - 1)));
  }
  double sum = 0.0;
  for (double x : out) sum += std::exp(x);
  for (double& x : out) x = std::exp(x) / sum;
  return out;
}

TEST(LagKv, PrioritiesAreRanksOfTheLagRelativeSpread) {
  const int sinks = 2, lag = 5, n = 2 + 4 * 5 + 3;  // 4 full partitions and 3 more
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> k(n * kD), v(n * kD);
  for (float& x : k) x = nd(rng);
  for (float& x : v) x = nd(rng);
  // Entries in a shuffled view order: the scorer sorts them by position.
  std::vector<int32_t> pos(n);
  std::iota(pos.begin(), pos.end(), 0);
  std::shuffle(pos.begin(), pos.end(), rng);
  std::vector<float> kv(n * kD), vv(n * kD);  // rows in view order
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < kD; ++c)
      kv[i * kD + c] = k[pos[i] * kD + c], vv[i * kD + c] = v[pos[i] * kD + c];
  test::FakeScoreContext cx(kD, 2, kv, vv);
  const auto out = priorities_of("lagkv:budget=12,sinks=2,lag=5", cx, pos);
  std::vector<double> want(n, 1.0);  // by position: sinks and the tail (positions 17..24)
  for (int p = 0; p + 1 < 4; ++p) {
    std::vector<int> part(lag), ref(lag);
    std::iota(part.begin(), part.end(), sinks + p * lag);
    std::iota(ref.begin(), ref.end(), sinks + (p + 1) * lag);
    const auto ks = spread_scores(k, part, ref), vs = spread_scores(v, part, ref);
    std::vector<double> s(lag);
    for (int t = 0; t < lag; ++t) s[t] = (ks[t] + vs[t]) / 2;
    for (int t = 0; t < lag; ++t) {
      int rank = 0;
      for (int u = 0; u < lag; ++u) rank += s[u] < s[t];
      want[part[t]] = static_cast<double>(rank) / lag;
    }
  }
  for (int i = 0; i < n; ++i) EXPECT_NEAR(out[i], want[pos[i]], 1e-6) << "position " << pos[i];
}

TEST(LagKv, AShortContextKeepsSinksThenTheMostRecent) {
  const int n = 12;  // fewer than sinks + 2 lag
  std::vector<float> k(n * kD, 0.5f), v(n * kD, 0.5f);
  test::FakeScoreContext cx(kD, 2, k, v);
  std::vector<int32_t> pos(n);
  std::iota(pos.begin(), pos.end(), 0);
  const auto out = priorities_of("lagkv:budget=6,sinks=2,lag=8", cx, pos);
  for (int t = 0; t < n; ++t)
    EXPECT_FLOAT_EQ(out[t], t < 2 ? 1.0f : static_cast<float>(t - 2) / (n - 2));
}

}  // namespace
}  // namespace kvbench
