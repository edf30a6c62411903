// Models with sliding-window layers (Gemma 3) in the policy cache: a local
// layer keeps its native window after every step whatever the policy (as
// llama.cpp's ISWA cache), memory splits by layer kind, `layers=` points a
// policy at one kind with ratio budgets of what that kind holds, keys
// re-rotate in the model's own pairing and base per layer, and snapshots
// carry all of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/common/error.h"
#include "policies/policy_cache.h"
#include "tests/support/cache_step.h"
#include "tests/support/state_round_trip.h"

namespace kvbench {
namespace {

constexpr int kLayers = 3, kDim = 8;
constexpr int32_t kWindow = 4;  // layer 1 is local, layers 0 and 2 global

CacheContext ctx(int64_t context_tokens = 40) {
  CacheContext c;
  c.shape = {kLayers, 1, 1, kDim};
  c.rope.n_dims = kDim;
  c.rope.freq_base = 1e6f;
  c.rope.neox = true;
  c.rope_local = c.rope;
  c.rope_local.freq_base = 1e4f;
  c.layer_window = {0, kWindow, 0};
  c.context_tokens = context_tokens;
  return c;
}

// The unrotated key of stream token t in layer l.
std::vector<float> raw_key(int l, int t) {
  std::vector<float> k(kDim);
  for (int c = 0; c < kDim; ++c) k[c] = std::sin(0.37f * t + 1.3f * c + 2.1f * l) * (1 + c % 3);
  return k;
}

const RopeConfig& rope_of(const CacheContext& c, int l) {
  return c.layer_window[l] > 0 ? c.rope_local : c.rope;
}

// Appends stream tokens [src0, src0 + n) at positions [pos0, pos0 + n), keys
// rotated at their positions as the model does.
void append(PolicyCache& cache, int32_t src0, int32_t pos0, int n, bool decode = false) {
  const auto begun =
      test::begin_test_step(cache, pos0, n, decode ? StepPhase::Decode : StepPhase::Prefill);
  for (int l = 0; l < kLayers; ++l) {
    std::vector<float> k, v;
    for (int t = 0; t < n; ++t) {
      std::vector<float> key = raw_key(l, src0 + t);
      rope_rotate_neox(key.data(), 1, kDim, begun.pos[t],
                       rope_inv_freq(rope_of(cache.context(), l)));
      k.insert(k.end(), key.begin(), key.end());
      for (int c = 0; c < kDim; ++c) v.push_back(std::cos(0.23f * (src0 + t) + c));
    }
    cache.append(l, k.data(), v.data());
    cache.view(l, 0);
  }
  cache.end_step();
}

std::vector<int32_t> positions(const PolicyCache& c, int layer) {
  std::vector<int32_t> out;
  for (const auto& e : c.store().entries(layer, 0)) out.push_back(e.pos);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int32_t> range(int32_t a, int32_t b) {  // [a, b)
  std::vector<int32_t> r(b - a);
  std::iota(r.begin(), r.end(), a);
  return r;
}

TEST(SlidingWindowCache, LocalLayersKeepTheirWindowAfterEveryStep) {
  auto cache = PolicyCache::create(parse_policy_spec("full"), ctx());
  append(*cache, 0, 0, 7);  // a chunk longer than the window
  EXPECT_EQ(positions(*cache, 0), range(0, 7));
  EXPECT_EQ(positions(*cache, 1), range(3, 7));  // (6 - 4, 6]
  EXPECT_EQ(positions(*cache, 2), range(0, 7));
  for (int t = 7; t < 12; ++t) append(*cache, t, t, 1, true);
  EXPECT_EQ(positions(*cache, 1), range(8, 12));
  EXPECT_EQ(positions(*cache, 2), range(0, 12));
  // Trimming is not eviction: the next position follows the stream.
  EXPECT_EQ(cache->next_position(0), 12);
  // Memory: 2 global layers x 12 entries + 1 local layer x 4, f32 K and V.
  const MemoryReport m = cache->memory();
  EXPECT_EQ(m.hot.entries, 2u * 12 + kWindow);
  EXPECT_EQ(m.hot.kv, (2u * 12 + kWindow) * kDim * 2 * 4);
  EXPECT_EQ(m.hot_layers[1].kv, uint64_t{kWindow} * kDim * 2 * 4);
  // The needle-survival queries see the truth: token 2 left the local layer.
  EXPECT_TRUE(cache->holds(0, 0, 2));
  EXPECT_FALSE(cache->holds(1, 0, 2));
  EXPECT_FALSE(cache->attends(1, 0, 2));
}

TEST(SlidingWindowCache, LayersParameterPointsAPolicyAtOneKind) {
  // budget 2 tokens: the local layer (window 4) and the global ones both evict.
  struct Case {
    const char* spec;
    size_t global, local;
  } cases[] = {{"window:budget=2", 2, 2},
               {"window:budget=2,layers=global", 2, kWindow},
               {"window:budget=2,layers=local", 10, 2},
               // A ratio budget is a ratio of what the layer's full cache holds:
               // half the 40-token context globally, half the window locally.
               {"window:budget=0.5", 10, 2},
               {"window:budget=0.5,layers=global", 10, kWindow}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.spec);
    auto cache = PolicyCache::create(parse_policy_spec(c.spec), ctx());
    append(*cache, 0, 0, 10);
    cache->end_prefill();
    EXPECT_EQ(positions(*cache, 0).size(), std::min<size_t>(c.global, 10));
    EXPECT_EQ(positions(*cache, 1).size(), c.local);
    EXPECT_EQ(positions(*cache, 2).size(), std::min<size_t>(c.global, 10));
    // The window policy keeps the newest entries wherever it acts.
    EXPECT_EQ(positions(*cache, 1).back(), 9);
  }
  // On a model without sliding-window layers the parameter has no meaning.
  CacheContext plain = ctx();
  plain.layer_window.clear();
  try {
    PolicyCache::create(parse_policy_spec("h2o:budget=8,layers=global"), plain);
    ADD_FAILURE() << "layers=global accepted without sliding-window layers";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("needs a model with sliding-window layers"),
              std::string::npos)
        << e.what();
  }
}

// A ratio restore budget (offload's restore, Quest's budget) on a local layer
// is a ratio of its window too: restoring a ratio of the whole context there
// would bring back most of the window (on Gemma 3 at 2k tokens, eviction to
// 12.5% + restore 12.5% held 47.5% of the full cache instead of 25%).
TEST(SlidingWindowCache, RatioRestoreBudgetsAreRatiosOfTheWindow) {
  const CacheContext c = ctx(40);
  auto offload =
      PolicyCache::create(parse_policy_spec("window:budget=0.25+offload:restore=0.5,page=1"), c);
  EXPECT_EQ(offload->layer_budget(0), 10 + 20);  // 25% and 50% of 40 tokens
  EXPECT_EQ(offload->layer_budget(1), 1 + 2);    // 25% and 50% of the 4-token window
  auto quest = PolicyCache::create(parse_policy_spec("quest:budget=0.5,page=1,dense=0"), c);
  EXPECT_EQ(quest->layer_budget(0) - quest->layer_budget(1), 20 - 2);
  // Absolute budgets stay what they say, up to what the window holds.
  auto tokens =
      PolicyCache::create(parse_policy_spec("window:budget=2+offload:restore=3,page=1"), c);
  EXPECT_EQ(tokens->layer_budget(0), 2 + 3);
  EXPECT_EQ(tokens->layer_budget(1), 2 + 3);

  // And what the cache holds after the prompt, restore included: 40 tokens,
  // evicted once after the prompt, each layer's last query then restoring its
  // best cold pages.
  offload = PolicyCache::create(
      parse_policy_spec("window:budget=0.25,timing=once+offload:restore=0.5,page=1"), c);
  const auto begun = test::begin_test_step(*offload, 0, 40);
  for (int l = 0; l < kLayers; ++l) {
    std::vector<float> k, v, q;
    for (int t = 0; t < 40; ++t) {
      std::vector<float> key = raw_key(l, t);
      rope_rotate_neox(key.data(), 1, kDim, t, rope_inv_freq(rope_of(c, l)));
      k.insert(k.end(), key.begin(), key.end());
      q.insert(q.end(), key.begin(), key.end());
      for (int d = 0; d < kDim; ++d) v.push_back(std::cos(0.23f * t + d));
    }
    offload->append(l, k.data(), v.data());
    if (offload->attention_request(l).queries) offload->observe_queries(l, q.data(), begun.pos);
    offload->view(l, 0);
  }
  offload->end_step();
  offload->end_prefill();
  // Hot entries (eviction budget + restored pages); the rest waits in the cold tier.
  EXPECT_EQ(offload->store().hot_entries(0, 0, 0), 30);
  EXPECT_EQ(offload->store().hot_entries(0, 1, 0), 3);  // was 4: the whole window restored
  EXPECT_EQ(offload->store().hot_entries(0, 2, 0), 30);
}

// StreamingLLM's contiguous positions on NEOX keys with a base per layer:
// every kept key equals the raw key rotated freshly at its new position with
// its own layer's RoPE.
TEST(SlidingWindowCache, ContiguousPositionsReRotateInHalvesWithEachLayersBase) {
  auto cache =
      PolicyCache::create(parse_policy_spec("streaming:budget=3,sinks=1,pos=contiguous"), ctx());
  append(*cache, 0, 0, 6);
  for (int t = 6; t < 9; ++t) append(*cache, t, cache->position_for(0, t), 1, true);
  for (int l = 0; l < kLayers; ++l) {
    SCOPED_TRACE(l);
    const auto entries = cache->store().entries(l, 0);
    ASSERT_FALSE(entries.empty());
    for (const auto& e : entries) {
      std::vector<float> k(kDim), v(kDim);
      ASSERT_TRUE(cache->store().find(l, 0, e.src, k.data(), v.data()));
      std::vector<float> want = raw_key(l, e.src);
      rope_rotate_neox(want.data(), 1, kDim, e.pos, rope_inv_freq(rope_of(cache->context(), l)));
      for (int c = 0; c < kDim; ++c) EXPECT_NEAR(k[c], want[c], 2e-5f) << "src " << e.src;
    }
  }
  // Sink + the 2 newest, contiguous behind the newest token (position 8:
  // each decode token came at next_position), in every layer alike.
  for (int l = 0; l < kLayers; ++l) EXPECT_EQ(positions(*cache, l), range(6, 9)) << l;
}

// The bug this test was written for: with a budget above the local window,
// only the global layers evict and renumber; numbering from the smallest
// position left the local layers' newest tokens at their stream positions,
// so the next query's position drifted away from the global layers' keys
// (on Gemma 3, 48k tokens past their 1k window). Anchored at the newest
// token, every layer agrees and no query is further than the budget from
// any key it attends.
TEST(SlidingWindowCache, ContiguousPositionsAgreeAcrossLayerKinds) {
  auto cache =
      PolicyCache::create(parse_policy_spec("streaming:budget=6,sinks=1,pos=contiguous"), ctx());
  append(*cache, 0, 0, 5);
  for (int t = 5; t < 40; ++t) {
    append(*cache, t, cache->position_for(0, t), 1, true);
    const int32_t next = cache->next_position(0);
    const auto global = positions(*cache, 0), local = positions(*cache, 1);
    ASSERT_EQ(global.size(), 6u);
    ASSERT_EQ(local.size(), static_cast<size_t>(kWindow));
    EXPECT_LE(next - global.front(), 6) << "step " << t;
    // The local layer holds the newest 4 tokens at the global layers' positions.
    EXPECT_EQ(local, std::vector<int32_t>(global.end() - kWindow, global.end())) << "step " << t;
  }
}

TEST(SlidingWindowCache, SnapshotsCarryTheWindowsAndTheLocalRope) {
  auto cache = PolicyCache::create(parse_policy_spec("h2o:budget=6,layers=global"), ctx());
  append(*cache, 0, 0, 9);
  auto back = test::reloaded(*cache);
  EXPECT_EQ(back->context().layer_window, ctx().layer_window);
  EXPECT_TRUE(back->context().rope.neox);
  EXPECT_TRUE(back->context().rope_local.neox);
  EXPECT_EQ(back->context().rope_local.freq_base, 1e4f);
  // It goes on exactly as the original.
  append(*cache, 9, 9, 3, true);
  append(*back, 9, 9, 3, true);
  for (int l = 0; l < kLayers; ++l) EXPECT_EQ(positions(*back, l), positions(*cache, l));
  EXPECT_EQ(positions(*back, 1), range(8, 12));
}

// Expected attention models each layer's own RoPE (the local layer's base,
// NEOX halves): one pre-RoPE query direction q0 seen at every position, and
// future=1, so each layer keeps the keys with the largest (R(now) q0) . k, R
// that layer's rotation; the local layer too, from the 4 its window holds.
// 40 positions, so that the two bases' angles differ by radians.
TEST(SlidingWindowCache, ExpectedAttentionUsesEachLayersRope) {
  // Several directions: with one, the wrong base can keep the same pair by chance.
  const std::vector<std::vector<float>> directions = {
      {0.9f, -1.4f, 0.3f, 2.0f, -0.7f, 1.1f, 0.5f, -1.8f},
      {1.5f, 0.2f, -2.0f, 0.4f, 1.0f, -0.6f, 0.8f, 1.3f},
      {-0.4f, 1.9f, 1.2f, -1.1f, 0.6f, 0.9f, -1.5f, 0.2f},
      {2.0f, 1.0f, 0.5f, -1.0f, -2.0f, 0.3f, 1.2f, -0.8f}};
  for (const std::vector<float>& q0 : directions) {
    SCOPED_TRACE(q0[0]);
    auto cache = PolicyCache::create(
        parse_policy_spec("expected:budget=2,sinks=0,future=1,covariance=off,vnorm=off"), ctx());
    const int n = 40;
    const auto begun = test::begin_test_step(*cache, 0, n);
    std::vector<std::vector<float>> keys(kLayers);
    for (int l = 0; l < kLayers; ++l) {
      const auto inv = rope_inv_freq(rope_of(cache->context(), l));
      std::vector<float> v, q;
      for (int t = 0; t < n; ++t) {
        std::vector<float> key = raw_key(l, t), query = q0;
        rope_rotate_neox(key.data(), 1, kDim, t, inv);
        rope_rotate_neox(query.data(), 1, kDim, t, inv);
        keys[l].insert(keys[l].end(), key.begin(), key.end());
        q.insert(q.end(), query.begin(), query.end());
        for (int c = 0; c < kDim; ++c) v.push_back(1.0f);
      }
      cache->append(l, keys[l].data(), v.data());
      cache->observe_queries(l, q.data(), begun.pos);
      cache->view(l, 0);
    }
    cache->end_step();
    std::vector<std::vector<int32_t>> held(kLayers);
    for (int l = 0; l < kLayers; ++l) held[l] = positions(*cache, l);
    ASSERT_EQ(held[1], range(n - kWindow, n));
    cache->end_prefill();
    for (int l = 0; l < kLayers; ++l) {
      SCOPED_TRACE(l);
      std::vector<float> future = q0;  // the query at the next position
      rope_rotate_neox(future.data(), 1, kDim, n, rope_inv_freq(rope_of(cache->context(), l)));
      std::vector<std::pair<float, int32_t>> z;
      for (int32_t t : held[l]) {
        float dot = 0.0f;
        for (int c = 0; c < kDim; ++c) dot += future[c] * keys[l][t * kDim + c];
        z.push_back({dot, t});
      }
      std::sort(z.rbegin(), z.rend());
      EXPECT_EQ(positions(*cache, l), (std::vector<int32_t>{std::min(z[0].second, z[1].second),
                                                            std::max(z[0].second, z[1].second)}));
    }
  }
}

}  // namespace
}  // namespace kvbench
