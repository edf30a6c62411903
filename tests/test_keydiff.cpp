// KeyDiff (policies/scorers/keydiff.cpp): priorities are minus the cosine of
// each key with the mean normalised key of the head's view, computed here
// the long way; and in a cache it keeps the keys that point elsewhere.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "policies/policy_cache.h"
#include "tests/support/cache_step.h"
#include "tests/support/fake_score_context.h"
#include "tests/support/scorer_priorities.h"

namespace kvbench {
namespace {

TEST(KeyDiff, PrioritiesAreMinusTheCosineWithTheMeanNormalisedKey) {
  constexpr int d = 8, n = 10, view = 13;  // 3 view entries are not candidates
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> k(view * d), v(view * d, 0.0f);
  for (float& x : k) x = nd(rng) + 0.8f;  // a shared direction, as real keys have
  test::FakeScoreContext cx(d, 2, k, v);
  std::vector<int32_t> pos(n);
  std::iota(pos.begin(), pos.end(), 0);
  const std::vector<float> out = test::scorer_priorities("keydiff:budget=4", cx, pos, 4);
  std::vector<double> a(d, 0.0);
  for (int j = 0; j < view; ++j) {
    double norm = 0.0;
    for (int c = 0; c < d; ++c) norm += double{k[j * d + c]} * k[j * d + c];
    for (int c = 0; c < d; ++c) a[c] += k[j * d + c] / std::sqrt(norm) / view;
  }
  double an = 0.0;
  for (double x : a) an += x * x;
  for (int i = 0; i < n; ++i) {
    double ka = 0.0, kn = 0.0;
    for (int c = 0; c < d; ++c)
      ka += k[i * d + c] * a[c], kn += double{k[i * d + c]} * k[i * d + c];
    EXPECT_NEAR(out[i], -ka / std::sqrt(kn * an), 1e-6) << "entry " << i;
  }
}

TEST(KeyDiff, ACacheKeepsTheKeysThatPointElsewhere) {
  // 24 keys along one direction, 4 of them turned away: with a budget of 4
  // after prefill, exactly those 4 stay in every head.
  CacheContext ctx;
  ctx.shape = {2, 2, 4, 8};
  ctx.rope.n_dims = 8;
  auto cache = PolicyCache::create(parse_policy_spec("keydiff:budget=4"), ctx);
  const std::vector<int> odd = {3, 9, 14, 20};
  const auto begun = test::begin_test_step(*cache, 0, 24);
  for (int l = 0; l < 2; ++l) {
    std::vector<float> k(24 * 2 * 8), v(k.size(), 0.5f);
    for (int t = 0; t < 24; ++t)
      for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 8; ++c) {
          const bool away = std::find(odd.begin(), odd.end(), t) != odd.end();
          k[(t * 2 + h) * 8 + c] = (away ? (c == 5 ? 2.0f : -0.1f) : (c == 0 ? 2.0f : 0.1f)) +
                                   0.01f * static_cast<float>(t % 3);
        }
    cache->append(l, k.data(), v.data());
    for (int h = 0; h < 2; ++h) cache->view(l, h);
  }
  cache->end_step();
  cache->end_prefill();
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) {
      std::vector<int64_t> want(odd.begin(), odd.end());
      EXPECT_EQ(cache->held_sources(l, h), want);
    }
}

}  // namespace
}  // namespace kvbench
