// CriticalKV (policies/parts/critical.cpp, `+critical`): after allocation a
// head keeps max(1, int(k x first)) entries by attention score (the
// scorer's protected ones first), then the best (s + eps) x N(j) for the
// rest of its k, N(j) the group's mean L1 norm of v_j through o_proj; s in
// kvpress's units (snapkv's votes / (window x group)). Checked against the
// long way on random keys, values, queries and projection.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "policies/policy_cache.h"
#include "tests/support/cache_step.h"
#include "tests/support/random_kvq.h"
#include "tests/support/random_projection.h"

namespace kvbench {
namespace {

constexpr int kLayers = 2, kKv = 2, kQ = 4, kDim = 8, kTokens = 29, kWindow = 3, kHidden = 5;
constexpr int kGroup = kQ / kKv;

struct Data : test::RandomKvq {
  Data() : RandomKvq({kLayers, kKv, kQ, kDim}, kTokens, 5, 2.0f) {}
};

std::unique_ptr<PolicyCache> prefilled(const std::string& spec, const Data& d, bool projection) {
  CacheContext ctx = test::test_cache_context({kLayers, kKv, kQ, kDim}, kTokens);
  if (projection)
    ctx.output_projection = std::make_shared<test::RandomProjection>(ctx.shape, kHidden);
  auto cache = PolicyCache::create(parse_policy_spec(spec), ctx);
  const auto begun = test::begin_test_step(*cache, 0, kTokens);
  for (int l = 0; l < kLayers; ++l) {
    cache->observe_queries(l, d.q[l].data(), begun.pos);
    cache->append(l, d.k[l].data(), d.v[l].data());
    for (int h = 0; h < kKv; ++h) cache->view(l, h);
  }
  cache->end_step();
  cache->end_prefill();
  return cache;
}

// The long way, for head (l, h) keeping k of kTokens; `guaranteed`: the
// allocator's safeguard, kept whole in stage 1.
std::vector<int64_t> expected_kept(const Data& d, int l, int h, int k, double eps, double first,
                                   int guaranteed = 0) {
  const test::RandomProjection proj({kLayers, kKv, kQ, kDim}, kHidden);
  auto key = [&](int t) { return &d.k[l][(t * kKv + h) * kDim]; };
  auto value = [&](int t) { return &d.v[l][(t * kKv + h) * kDim]; };
  // SnapKV's votes (kernel 1), as kvpress averages them.
  std::vector<double> s(kTokens, 0.0);
  for (int i = kTokens - kWindow; i < kTokens; ++i)
    for (int g = 0; g < kGroup; ++g) {
      const float* q = &d.q[l][(i * kQ + h * kGroup + g) * kDim];
      std::vector<double> z(i + 1);
      double mx = -1e300, sum = 0.0;
      for (int t = 0; t <= i; ++t) {
        double dot = 0.0;
        for (int c = 0; c < kDim; ++c) dot += double{q[c]} * key(t)[c];
        z[t] = dot / std::sqrt(double{kDim});
        mx = std::max(mx, z[t]);
      }
      for (int t = 0; t <= i; ++t) sum += std::exp(z[t] - mx);
      for (int t = 0; t <= i; ++t) s[t] += std::exp(z[t] - mx) / sum / (kWindow * kGroup);
    }
  // N(t): the group's mean L1 norm of v_t through its query heads' columns.
  std::vector<double> n(kTokens, 0.0);
  for (int t = 0; t < kTokens; ++t)
    for (int g = 0; g < kGroup; ++g) {
      const int qh = h * kGroup + g;
      for (int o = 0; o < kHidden; ++o) {
        double x = 0.0;
        for (int c = 0; c < kDim; ++c)
          x += double{value(t)[c]} * proj.layer(l)[o * kQ * kDim + qh * kDim + c];
        n[t] += std::fabs(x) / kGroup;
      }
    }
  // Stage 1: the window, then the highest s; stage 2: (s + eps) N.
  const int m1 = std::max({1, static_cast<int>(k * first), std::min(guaranteed, k)});
  std::vector<int> rest;
  std::set<int64_t> kept;
  for (int t = kTokens - kWindow; t < kTokens; ++t) kept.insert(t);
  for (int t = 0; t < kTokens - kWindow; ++t) rest.push_back(t);
  std::sort(rest.begin(), rest.end(), [&](int a, int b) { return s[a] > s[b]; });
  for (int r = 0; r < m1 - kWindow; ++r) kept.insert(rest[r]);
  rest.erase(rest.begin(), rest.begin() + (m1 - kWindow));
  std::sort(rest.begin(), rest.end(),
            [&](int a, int b) { return (s[a] + eps) * n[a] > (s[b] + eps) * n[b]; });
  for (int r = 0; r < k - m1; ++r) kept.insert(rest[r]);
  return {kept.begin(), kept.end()};
}

const std::string kSnap = "snapkv:budget=14,window=3,kernel=1,pool=avg";

TEST(Critical, KeepsTheTopScoresThenTheLargestProjectedOutputs) {
  const Data d;
  for (const auto& [eps, first] : {std::pair{1e-4, 0.5}, {0.05, 0.5}, {1e-4, 0.3}}) {
    SCOPED_TRACE(testing::Message() << "eps " << eps << " first " << first);
    auto cache = prefilled(
        kSnap + "+critical:eps=" + std::to_string(eps) + ",first=" + std::to_string(first), d,
        true);
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKv; ++h)
        EXPECT_EQ(cache->held_sources(l, h), expected_kept(d, l, h, 14, eps, first));
  }
}

TEST(Critical, ReranksWithinTheHeadBudgetsAdaKvGives) {
  const Data d;
  auto ada = prefilled(kSnap + "+adakv", d, true);
  auto critical = prefilled(kSnap + "+adakv+critical", d, true);
  int differ = 0;
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      const int k = static_cast<int>(ada->held_sources(l, h).size());
      EXPECT_EQ(critical->held_sources(l, h), expected_kept(d, l, h, k, 1e-4, 0.5));
      differ += ada->held_sources(l, h) != critical->held_sources(l, h);
    }
  EXPECT_GT(differ, 0);  // the re-ranking changed something
}

// kvpress's CriticalAdaKVPress pads Ada-KV's safeguard (each head's top
// scores) to the maximum score, so stage 2 cannot drop it: with floor 0.9
// (ceil(0.9 x 14) = 13 guaranteed, more than int(k / 2)) stage 1 keeps all
// 13, where without the guarantee stage 2 re-ranks some of them away.
TEST(Critical, KeepsAdaKvsSafeguardThroughStageTwo) {
  const Data d;
  auto ada = prefilled(kSnap + "+adakv:floor=0.9", d, true);
  auto critical = prefilled(kSnap + "+adakv:floor=0.9+critical", d, true);
  int without = 0;
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      const int k = static_cast<int>(ada->held_sources(l, h).size());
      ASSERT_GE(k, 13);
      EXPECT_EQ(critical->held_sources(l, h), expected_kept(d, l, h, k, 1e-4, 0.5, 13));
      without += critical->held_sources(l, h) != expected_kept(d, l, h, k, 1e-4, 0.5);
    }
  EXPECT_GT(without, 0);  // the guarantee decided something
}

TEST(Critical, NeedsAnAttentionScorerAndTheProjection) {
  try {
    parse_policy_spec("h2o+critical");
    ADD_FAILURE() << "h2o+critical accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("snapkv"), std::string::npos) << e.what();
  }
  const Data d;
  EXPECT_THROW(prefilled(kSnap + "+critical", d, false), InputError);
}

}  // namespace
}  // namespace kvbench
