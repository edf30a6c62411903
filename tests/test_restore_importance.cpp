// Restore by importance (the seed's rule, +offload:rule=importance): every
// cold token's attention from each step's last query, a softmax over every
// entry the head holds, goes into its running average; a page whose token
// reaches the threshold comes back, the best first, within the restore budget.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "policies/policy_cache.h"
#include "tests/support/cache_step.h"
#include "tests/support/state_round_trip.h"

namespace kvbench {
namespace {

constexpr int kLayers = 2, kKv = 2, kQ = 4, kDim = 16;

CacheContext ctx() { return test::test_cache_context({kLayers, kKv, kQ, kDim}, 1000); }

// Token 9's key points along the queries (every query is 0.1 everywhere).
float key(int l, int h, int t, int c) {
  return t == 9 ? 10.0f : std::sin(0.37f * t + 1.3f * c + 0.7f * h + 2.1f * l) * 0.5f;
}

// `n` tokens from stream index (and position) `t0`, one prefill step.
void append(PolicyCache& cache, int t0, int n) {
  const auto begun = test::begin_test_step(cache, t0, n);
  std::vector<float> k(n * kKv * kDim), v(k.size(), 0.5f), q(n * kQ * kDim, 0.1f);
  for (int l = 0; l < kLayers; ++l) {
    for (int t = 0; t < n; ++t)
      for (int h = 0; h < kKv; ++h)
        for (int c = 0; c < kDim; ++c) k[(t * kKv + h) * kDim + c] = key(l, h, t0 + t, c);
    cache.append(l, k.data(), v.data());
    if (cache.attention_request(l).queries) cache.observe_queries(l, q.data(), begun.pos);
    for (int h = 0; h < kKv; ++h) cache.view(l, h);
  }
  cache.end_step();
}

// The attention the all-0.1 query pays token `t` among tokens [0, n): a
// softmax of q . k * scale (0: 1/sqrt(head_dim)), soft-capped when cap > 0,
// computed here on its own.
double attention(int l, int h, int t, int n, double scale = 0.0, double cap = 0.0) {
  if (scale == 0.0) scale = 1.0 / std::sqrt(double{kDim});
  std::vector<double> logit(n);
  for (int s = 0; s < n; ++s) {
    double dot = 0.0;
    for (int c = 0; c < kDim; ++c) dot += 0.1 * key(l, h, s, c);
    logit[s] = dot * scale;
    if (cap > 0.0) logit[s] = cap * std::tanh(logit[s] / cap);
  }
  double sum = 0.0;
  for (double x : logit) sum += std::exp(x);
  return std::exp(logit[t]) / sum;
}

// Every cold page of b holds a's running averages, head by head.
void expect_same_cold_stats(const PolicyCache& a, const PolicyCache& b) {
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      const auto& pa = a.store().cold()->head(l * kKv + h).pages;
      const auto& pb = b.store().cold()->head(l * kKv + h).pages;
      ASSERT_EQ(pa.size(), pb.size());
      for (size_t p = 0; p < pa.size(); ++p) EXPECT_EQ(pa[p].meta.stats, pb[p].meta.stats);
    }
}

std::unique_ptr<PolicyCache> make(const std::string& threshold, const CacheContext& c = ctx()) {
  // A window of 4 hot entries, evicted once after the prompt into pages of 2;
  // 2 tokens (one page) may come back.
  return PolicyCache::create(
      parse_policy_spec("window:budget=4,timing=once+offload:page=2,restore=2,rule=importance,"
                        "threshold=" +
                        threshold),
      c);
}

TEST(RestoreByImportance, ATokenWhoseAttentionReachesTheThresholdComesBack) {
  auto cache = make("0.3");
  append(*cache, 0, 30);
  cache->end_prefill();  // evicts 26 tokens, then the prompt's last query judges them
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      SCOPED_TRACE("layer " + std::to_string(l) + " head " + std::to_string(h));
      ASSERT_GT(attention(l, h, 9, 30), 0.3);
      const Segment* r = cache->store().segment(l, h, kRestored);
      ASSERT_EQ(r->size(), 2);
      EXPECT_EQ(r->meta.src[0], 8);  // token 9's page: tokens 8 and 9
      EXPECT_EQ(r->meta.src[1], 9);
      EXPECT_TRUE(cache->attends(l, h, 9));
      // One observation: the running average is that step's attention
      // (bias-corrected), as computed independently here.
      for (const ColdPage& p : cache->store().cold()->head(l * kKv + h).pages)
        for (int32_t i = 0; i < p.meta.size(); ++i) {
          const float* st = p.meta.stat(i);
          const double expected = attention(l, h, p.meta.src[i], 30);
          EXPECT_NEAR(st[0] / st[1], expected, 1e-5 + 1e-4 * expected) << "token " << p.meta.src[i];
          EXPECT_FLOAT_EQ(st[1], 2.0f / 101);  // window 100: alpha = 2 / (100 + 1)
        }
    }
}

// A model with its own attention scale (Gemma 3 27B: 1/sqrt(168) for head_dim
// 128) and soft-capping (Gemma 2) pays its entries what its kernels pay them:
// the running averages follow that attention, not 1/sqrt(head_dim)'s. Here
// the cap holds token 9's logit near 2, so its attention stays below 0.3 and
// nothing comes back, where the uncapped softmax would bring it back.
TEST(RestoreByImportance, TheModelsScaleAndSoftCapDecide) {
  CacheContext c = ctx();
  c.attn_scale = 0.2f;
  c.attn_softcap = 2.0f;
  auto cache = make("0.3", c);
  append(*cache, 0, 30);
  cache->end_prefill();
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      SCOPED_TRACE("layer " + std::to_string(l) + " head " + std::to_string(h));
      ASSERT_GT(attention(l, h, 9, 30, 0.2), 0.3);       // the scale alone: back
      ASSERT_LT(attention(l, h, 9, 30, 0.2, 2.0), 0.3);  // scale and cap: not
      EXPECT_EQ(cache->store().restored(l, h), 0);
      for (const ColdPage& p : cache->store().cold()->head(l * kKv + h).pages)
        for (int32_t i = 0; i < p.meta.size(); ++i) {
          const float* st = p.meta.stat(i);
          const double expected = attention(l, h, p.meta.src[i], 30, 0.2, 2.0);
          EXPECT_NEAR(st[0] / st[1], expected, 1e-5 + 1e-4 * expected) << "token " << p.meta.src[i];
        }
    }
  // A clone keeps the model's attention; a snapshot gets it back from the
  // model it is checked against (adopt_model), and then decides the same.
  auto copy = cache->clone();
  auto loaded = test::reloaded(*cache);
  loaded->adopt_model(c);
  EXPECT_EQ(copy->context().attn_scale, 0.2f);
  EXPECT_EQ(loaded->context().attn_softcap, 2.0f);
  for (PolicyCache* x : {cache.get(), copy.get(), loaded.get()}) append(*x, 30, 1);
  for (PolicyCache* x : {copy.get(), loaded.get()}) expect_same_cold_stats(*cache, *x);
}

TEST(RestoreByImportance, BelowTheThresholdNothingComesBack) {
  auto cache = make("0.99");
  append(*cache, 0, 30);
  cache->end_prefill();
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      ASSERT_LT(attention(l, h, 9, 30), 0.99);
      EXPECT_EQ(cache->store().restored(l, h), 0);
      EXPECT_FALSE(cache->attends(l, h, 9));
      EXPECT_TRUE(cache->holds(l, h, 9));  // still held, cold
    }
  // Less hot memory than the bound rule, which always fills its budget.
  auto bound = PolicyCache::create(
      parse_policy_spec("window:budget=4,timing=once+offload:page=2,restore=2"), ctx());
  append(*bound, 0, 30);
  bound->end_prefill();
  EXPECT_LT(cache->memory().hot.kv, bound->memory().hot.kv);
}

// The running averages travel with the cold tier: a snapshot and a clone
// keep them, so the next step decides the same.
TEST(RestoreByImportance, TheAveragesSurviveSnapshotsAndClones) {
  auto cache = make("0.3");
  append(*cache, 0, 30);
  cache->end_prefill();
  auto loaded = test::reloaded(*cache);
  auto copy = cache->clone();
  for (PolicyCache* c : {loaded.get(), copy.get()}) expect_same_cold_stats(*cache, *c);
  append(*cache, 30, 1);
  append(*loaded, 30, 1);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h)
      EXPECT_EQ(cache->store().segment(l, h, kRestored)->meta.src,
                loaded->store().segment(l, h, kRestored)->meta.src);
}

}  // namespace
}  // namespace kvbench
