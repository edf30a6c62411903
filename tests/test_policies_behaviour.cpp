// What each scorer / allocator / storage keeps, on hand-made attention and
// keys: H2O's heavy hitters, SnapKV against a naive re-computation, TOVA's
// per-layer set, PyramidKV's schedule, Ada-KV's allocation, key norms, the
// seeded random control, the oracle, mixed precision, CaM's merged values
// against a by-hand simulation; plus branching work:
// import_from a full cache equals running the policy from scratch, clones
// are independent, and observation is requested only when needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "policies/cache_errors.h"
#include "policies/parts/value_merge.h"
#include "policies/policy_cache.h"
#include "tests/support/cache_step.h"

namespace kvbench {
namespace {

constexpr int kLayers = 2, kKv = 2, kQ = 4, kDim = 8, kGroup = kQ / kKv;

CacheContext ctx(int64_t tokens = 1000) {
  CacheContext c = test::test_cache_context({kLayers, kKv, kQ, kDim}, tokens);
  c.seed = 5;
  return c;
}

using KeyFn = std::function<float(int l, int h, int t, int c)>;
using QueryFn = std::function<float(int l, int qh, int t, int c)>;
// Unnormalised attention of the query at position qp to the key at kp.
using AttnFn = std::function<float(int l, int h, int qp, int kp)>;

float default_key(int l, int h, int t, int c) { return std::sin(0.7f * t + c + h + 3 * l); }
float default_query(int l, int qh, int t, int c) { return std::cos(0.3f * t + 0.5f * c + qh + l); }
float uniform_attention(int, int, int, int) { return 1.0f; }
float default_value(int, int, int, int) { return 0.5f; }

// One step: tokens [src0, src0 + n) at positions = stream indices.
void step(PolicyCache& cache, int32_t src0, int n, bool decode, const KeyFn& kf = default_key,
          const AttnFn& af = uniform_attention, const QueryFn& qf = default_query,
          const KeyFn& vf = default_value, int seq = 0) {
  const auto begun =
      test::begin_test_step(cache, src0, n, decode ? StepPhase::Decode : StepPhase::Prefill, seq);
  std::vector<float> k(n * kKv * kDim), v(k.size()), q(n * kQ * kDim);
  for (int l = 0; l < kLayers; ++l) {
    for (int t = 0; t < n; ++t) {
      for (int h = 0; h < kKv; ++h)
        for (int c = 0; c < kDim; ++c) {
          k[(t * kKv + h) * kDim + c] = kf(l, h, src0 + t, c);
          v[(t * kKv + h) * kDim + c] = vf(l, h, src0 + t, c);
        }
      for (int qh = 0; qh < kQ; ++qh)
        for (int c = 0; c < kDim; ++c) q[(t * kQ + qh) * kDim + c] = qf(l, qh, src0 + t, c);
    }
    cache.append(l, k.data(), v.data());
    const AttentionRequest req = cache.attention_request(l);
    if (req.queries) cache.observe_queries(l, q.data(), begun.pos);
    std::vector<const KvHeadView*> views;
    for (int h = 0; h < kKv; ++h) views.push_back(&cache.view(l, h));
    if (!req.wanted) continue;
    for (int h = 0; h < kKv; ++h) {
      const KvHeadView& view = *views[h];
      const int32_t m = view.size();
      std::vector<float> probs(kGroup * m);
      for (int t = req.last_queries < 0 ? 0 : std::max(0, n - req.last_queries); t < n; ++t) {
        for (int g = 0; g < kGroup; ++g) {
          double sum = 0;
          for (int32_t j = 0; j < m; ++j) {
            const int kp = view.positions()[j];
            probs[g * m + j] = kp <= begun.pos[t] ? af(l, h, begun.pos[t], kp) : 0.0f;
            sum += probs[g * m + j];
          }
          for (int32_t j = 0; j < m; ++j) probs[g * m + j] /= static_cast<float>(sum);
        }
        AttentionRows rows{l, h, t, begun.pos[t], kGroup, m, probs.data(), m};
        cache.observe(rows);
      }
    }
  }
  cache.end_step();
}

std::set<int64_t> held(const PolicyCache& c, int l, int h) {
  const auto v = c.held_sources(l, h);
  return {v.begin(), v.end()};
}

TEST(Policies, ObservationIsRequestedOnlyWhenThePolicyNeedsIt) {
  for (const char* spec :
       {"full", "window", "streaming", "knorm", "random", "oracle", "full+int4"}) {
    auto c = PolicyCache::create(parse_policy_spec(spec), ctx());
    EXPECT_FALSE(c->attention_request(0).wanted) << spec;
    EXPECT_FALSE(c->attention_request(0).queries) << spec;
  }
  for (const char* spec : {"h2o", "hybrid", "tova"}) {
    auto c = PolicyCache::create(parse_policy_spec(spec), ctx());
    EXPECT_TRUE(c->attention_request(0).wanted) << spec;
  }
  auto tova = PolicyCache::create(parse_policy_spec("tova"), ctx());
  EXPECT_EQ(tova->attention_request(1).last_queries, 1);  // only the current query
  EXPECT_TRUE(
      PolicyCache::create(parse_policy_spec("snapkv"), ctx())->attention_request(0).queries);
  EXPECT_TRUE(PolicyCache::create(parse_policy_spec("window+offload"), ctx())
                  ->attention_request(0)
                  .queries);
  // A full cache others branch from can collect what they need.
  CacheContext cc = ctx();
  cc.collect_attention = true;
  cc.keep_queries = 8;
  auto full = PolicyCache::create(parse_policy_spec("full"), cc);
  EXPECT_TRUE(full->attention_request(0).wanted);
  EXPECT_TRUE(full->attention_request(0).queries);
}

TEST(Policies, H2oKeepsTheHeavyHittersAndTheRecentTokens) {
  // Tokens 3 and 10 draw most of every query's attention in head 0; head 1
  // favours token 20. Budget 8: 4 heavy + 4 recent.
  auto cache = PolicyCache::create(parse_policy_spec("h2o:budget=8"), ctx());
  auto af = [](int, int h, int, int kp) {
    if (h == 0) return kp == 3 || kp == 10 ? 50.0f : 1.0f;
    return kp == 20 ? 50.0f : 1.0f;
  };
  step(*cache, 0, 6, false, default_key, af);
  for (int32_t t = 6; t < 40; ++t) step(*cache, t, 1, true, default_key, af);
  for (int l = 0; l < kLayers; ++l) {
    const auto h0 = held(*cache, l, 0), h1 = held(*cache, l, 1);
    EXPECT_EQ(h0.size(), 8u);
    EXPECT_EQ(h1.size(), 8u);
    for (int64_t t : {3, 10, 36, 37, 38, 39}) EXPECT_TRUE(h0.count(t)) << t;
    for (int64_t t : {20, 36, 37, 38, 39}) EXPECT_TRUE(h1.count(t)) << t;
    EXPECT_FALSE(h1.count(3));  // per-head choice
  }
}

TEST(Policies, HybridRanksByMeanAttentionNotBySum) {
  // Token 2 is old and mildly attended by every query (a large sum); token
  // 30 is new and strongly attended: H2O keeps 2, hybrid (mean) keeps 30.
  auto af = [](int, int, int, int kp) { return kp == 2 ? 3.0f : kp == 30 ? 12.0f : 1.0f; };
  auto run = [&](const char* spec) {
    auto c = PolicyCache::create(parse_policy_spec(spec), ctx());
    step(*c, 0, 8, false, default_key, af);
    for (int32_t t = 8; t < 36; ++t) step(*c, t, 1, true, default_key, af);
    return held(*c, 0, 0);
  };
  const auto h2o = run("h2o:budget=5,recent=0.2");
  const auto hybrid = run("hybrid:budget=5,split=0.8");
  EXPECT_TRUE(h2o.count(2));
  EXPECT_TRUE(hybrid.count(30));
  EXPECT_TRUE(hybrid.count(35) && h2o.count(35));  // the recent share
}

TEST(Policies, SnapKvMatchesANaiveRecomputation) {
  // 30 prompt tokens in chunks of 7; budget 12 = window 4 + the 8 best
  // pooled votes of the window's queries.
  for (const char* pool : {"max", "avg"}) {
    SCOPED_TRACE(pool);
    auto cache = PolicyCache::create(
        parse_policy_spec(std::string("snapkv:budget=12,window=4,kernel=3,pool=") + pool), ctx());
    for (int32_t t = 0; t < 30; t += 7) step(*cache, t, std::min(7, 30 - t), false);
    EXPECT_EQ(held(*cache, 0, 0).size(), 30u);  // nothing evicted before end_prefill
    cache->end_prefill();
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKv; ++h) {
        // Naive SnapKV: votes[j] = sum over window queries w and group heads
        // g of softmax_j(q_w,g . k_j / sqrt(d)) over keys j <= w.
        std::vector<double> votes(30, 0.0);
        for (int w = 26; w < 30; ++w)
          for (int g = 0; g < kGroup; ++g) {
            const int qh = h * kGroup + g;
            std::vector<double> logit(w + 1);
            double mx = -1e300, sum = 0;
            for (int j = 0; j <= w; ++j) {
              double d = 0;
              for (int c = 0; c < kDim; ++c)
                d += default_query(l, qh, w, c) * default_key(l, h, j, c);
              logit[j] = d / std::sqrt(double{kDim});
              mx = std::max(mx, logit[j]);
            }
            for (int j = 0; j <= w; ++j) sum += std::exp(logit[j] - mx);
            for (int j = 0; j <= w; ++j) votes[j] += std::exp(logit[j] - mx) / sum;
          }
        std::vector<std::pair<double, int>> pooled;
        for (int j = 0; j < 26; ++j) {
          double acc = std::string(pool) == "max" ? -1e300 : 0.0;
          for (int t = std::max(0, j - 1); t <= std::min(25, j + 1); ++t)
            acc = std::string(pool) == "max" ? std::max(acc, votes[t]) : acc + votes[t];
          pooled.emplace_back(std::string(pool) == "max" ? acc : acc / 3, j);
        }
        std::sort(pooled.begin(), pooled.end(), [](auto& a, auto& b) {
          return a.first != b.first ? a.first > b.first : a.second > b.second;
        });
        std::set<int64_t> want = {26, 27, 28, 29};
        for (int i = 0; i < 8; ++i) want.insert(pooled[i].second);
        EXPECT_EQ(held(*cache, l, h), want) << "layer " << l << " head " << h;
      }
    // Decode is not evicted after the prefill.
    step(*cache, 30, 1, true);
    EXPECT_EQ(held(*cache, 0, 0).size(), 13u);
  }
}

TEST(Policies, TovaKeepsOneTokenSetPerLayer) {
  // Heads disagree: the layer keeps what the heads' summed attention favours.
  auto cache = PolicyCache::create(parse_policy_spec("tova:budget=6"), ctx());
  auto af = [](int l, int h, int, int kp) { return (kp % 5 == h + l) ? 40.0f : 1.0f; };
  for (int32_t t = 0; t < 30; t += 3) step(*cache, t, 3, false, default_key, af);
  for (int l = 0; l < kLayers; ++l) {
    EXPECT_EQ(held(*cache, l, 0), held(*cache, l, 1)) << "layer " << l;
    EXPECT_EQ(held(*cache, l, 0).size(), 6u);
  }
  EXPECT_NE(held(*cache, 0, 0), held(*cache, 1, 0));
}

TEST(Policies, PyramidSpreadsTheBudgetLinearlyWithTheSameTotal) {
  const auto b = pyramid_budgets(30, 512, 32, 20.0);
  int64_t total = 0;
  for (size_t l = 0; l < b.size(); ++l) {
    total += b[l];
    if (l > 0) EXPECT_LE(b[l], b[l - 1]);
  }
  EXPECT_NEAR(static_cast<double>(total), 30.0 * 512, 30.0);  // rounding per layer
  EXPECT_EQ(b.back(), 32 + 24);    // (512 - 32) / 20 + the reserved window
  EXPECT_EQ(b.front(), 32 + 936);  // 2 x 480 - 24 + the window
  auto cache = PolicyCache::create(parse_policy_spec("window:budget=10+pyramid:beta=5"), ctx());
  for (int32_t t = 0; t < 40; t += 4) step(*cache, t, 4, false);
  EXPECT_EQ(held(*cache, 0, 0).size(), static_cast<size_t>(cache->layer_budget(0)));
  EXPECT_EQ(held(*cache, 1, 0).size(), static_cast<size_t>(cache->layer_budget(1)));
  EXPECT_EQ(cache->layer_budget(0) + cache->layer_budget(1), 20);
  EXPECT_GT(cache->layer_budget(0), cache->layer_budget(1));
}

TEST(Policies, AdaKvGivesDispersedHeadsMoreOfTheLayersBudget) {
  // Head 0 attends to two tokens only, head 1 evenly: Ada-KV moves budget
  // from head 0 to head 1, keeping head 0 at least floor x budget.
  auto cache =
      PolicyCache::create(parse_policy_spec("h2o:budget=8,recent=0+adakv:floor=0.25"), ctx());
  auto af = [](int, int h, int, int kp) {
    return h == 0 ? (kp == 1 || kp == 2 ? 1000.0f : 0.001f) : 1.0f;
  };
  for (int32_t t = 0; t < 40; t += 4) step(*cache, t, 4, false, default_key, af);
  for (int l = 0; l < kLayers; ++l) {
    const auto h0 = held(*cache, l, 0), h1 = held(*cache, l, 1);
    EXPECT_EQ(h0.size() + h1.size(), 16u);
    EXPECT_GE(h0.size(), 2u);
    EXPECT_GT(h1.size(), h0.size());
    EXPECT_TRUE(h0.count(1) && h0.count(2));
  }
}

TEST(Policies, KnormKeepsTheLowestNormKeys) {
  auto kf = [](int, int, int t, int c) { return (t % 4 == 0 ? 0.1f : 3.0f) * (c + 1); };
  auto cache = PolicyCache::create(parse_policy_spec("knorm:budget=5"), ctx());
  step(*cache, 0, 20, false, kf);
  EXPECT_EQ(held(*cache, 0, 1), (std::set<int64_t>{0, 4, 8, 12, 16}));
}

TEST(Policies, RandomIsSeededAndIndependentOfTiming) {
  auto run = [](const char* spec, int chunk) {
    auto c = PolicyCache::create(parse_policy_spec(spec), ctx());
    for (int32_t t = 0; t < 60; t += chunk) step(*c, t, chunk, false);
    return held(*c, 1, 1);
  };
  const auto a = run("random:budget=10,seed=3", 5);
  EXPECT_EQ(a.size(), 10u);
  EXPECT_EQ(a, run("random:budget=10,seed=3", 5));
  EXPECT_EQ(a, run("random:budget=10,seed=3", 60));  // a token's fate is its own hash
  EXPECT_NE(a, run("random:budget=10,seed=4", 5));
  EXPECT_GT(*a.rbegin() - *a.begin(), 20);  // spread over the stream, not a window
}

TEST(Policies, OracleKeepsTheSuppliedImportance) {
  auto cache = PolicyCache::create(parse_policy_spec("oracle:budget=4"), ctx());
  std::vector<float> imp(30, 0.0f);
  imp[2] = 5, imp[7] = 4, imp[19] = 3, imp[23] = 2;
  cache->set_importance(1, 0, imp);
  for (int32_t t = 0; t < 30; t += 10) step(*cache, t, 10, false);
  EXPECT_EQ(held(*cache, 1, 0).size(), 30u);  // timing=once: nothing before end_prefill
  cache->end_prefill();
  EXPECT_EQ(held(*cache, 1, 0), (std::set<int64_t>{2, 7, 19, 23}));
  EXPECT_EQ(held(*cache, 0, 0),
            (std::set<int64_t>{26, 27, 28, 29}));  // no scores: ties keep the newest
  EXPECT_THROW(PolicyCache::create(parse_policy_spec("h2o"), ctx())->set_importance(0, 0, imp),
               InputError);
}

TEST(Policies, MixedKeepsTheImportantShareInF32) {
  auto af = [](int, int, int, int kp) { return kp == 1 || kp == 4 ? 30.0f : 1.0f; };
  auto cache = PolicyCache::create(
      parse_policy_spec("h2o:budget=16,recent=0.25+mixed:full=0.25,bits=8"), ctx());
  for (int32_t t = 0; t < 40; t += 4) step(*cache, t, 4, false, default_key, af);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      const Segment* f32 = cache->store().segment(l, h, kIncoming);
      const Segment* q = cache->store().segment(l, h, kMain);
      EXPECT_EQ(f32->size(), 4);  // 25% of 16
      EXPECT_EQ(q->size(), 12);
      EXPECT_EQ(q->precision(), "int8");
      std::set<int32_t> full(f32->meta.src.begin(), f32->meta.src.end());
      // The recent window is protected (+inf priority): the 4 newest in f32.
      EXPECT_EQ(full, (std::set<int32_t>{36, 37, 38, 39}));
    }
}

TEST(Policies, StartingFromAFullCacheEqualsRunningThePolicyFromScratch) {
  // The harness prefills once with `full` and branches: a streaming policy
  // imported when its budget is first exceeded, and an after-prefill policy
  // imported at the end of the prompt, must equal their own runs.
  CacheContext cc = ctx();
  cc.collect_attention = true;
  cc.keep_queries = 4;
  auto af = [](int, int h, int, int kp) { return kp % 7 == h ? 9.0f : 1.0f; };
  for (const char* spec : {"h2o:budget=16", "window:budget=16+int4", "snapkv:budget=12,window=4",
                           "tova:budget=16+kivi2:group=4,residual=8"}) {
    SCOPED_TRACE(spec);
    const bool once = std::string(spec).rfind("snapkv", 0) == 0;
    auto scratch = PolicyCache::create(parse_policy_spec(spec), ctx());
    auto full = PolicyCache::create(parse_policy_spec("full"), cc);
    // Chunks of 4: the budget (16) is first exceeded by the chunk ending at 20.
    for (int32_t t = 0; t < 32; t += 4) {
      step(*scratch, t, 4, false, default_key, af);
      if (once || t < 16) step(*full, t, 4, false, default_key, af);
    }
    auto branched = PolicyCache::create(parse_policy_spec(spec), ctx());
    branched->import_from(*full);
    if (!once)
      for (int32_t t = 16; t < 32; t += 4) step(*branched, t, 4, false, default_key, af);
    scratch->end_prefill();
    branched->end_prefill();
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKv; ++h) EXPECT_EQ(held(*branched, l, h), held(*scratch, l, h));
    EXPECT_EQ(branched->memory().hot, scratch->memory().hot);
  }
  // What a policy needs must have been collected.
  auto plain = PolicyCache::create(parse_policy_spec("full"), ctx());
  step(*plain, 0, 4, false);
  EXPECT_THROW(PolicyCache::create(parse_policy_spec("h2o"), ctx())->import_from(*plain),
               InputError);
  EXPECT_THROW(PolicyCache::create(parse_policy_spec("snapkv"), ctx())->import_from(*plain),
               InputError);
  EXPECT_NO_THROW(PolicyCache::create(parse_policy_spec("window"), ctx())->import_from(*plain));
  auto not_full = PolicyCache::create(parse_policy_spec("window"), ctx());
  EXPECT_THROW(PolicyCache::create(parse_policy_spec("window"), ctx())->import_from(*not_full),
               InputError);
}

TEST(Policies, ClonesAreIndependentDeepCopies) {
  auto a = PolicyCache::create(parse_policy_spec("h2o:budget=8+offload:page=2"), ctx());
  auto af = [](int, int, int, int kp) { return kp == 2 ? 20.0f : 1.0f; };
  step(*a, 0, 20, false, default_key, af);
  auto b = a->clone();
  const auto before = held(*b, 0, 0);
  const MemoryReport mb = b->memory();
  for (int32_t t = 20; t < 30; ++t) step(*a, t, 1, true, default_key, af);
  a->seq_rm(0, 0, 5);
  EXPECT_EQ(held(*b, 0, 0), before);
  EXPECT_EQ(b->memory().hot, mb.hot);
  EXPECT_EQ(b->memory().cold, mb.cold);
  // The clone carries on exactly as the original would have.
  auto c = b->clone();
  for (int32_t t = 20; t < 30; ++t) {
    step(*b, t, 1, true, default_key, af);
    step(*c, t, 1, true, default_key, af);
  }
  EXPECT_EQ(held(*b, 1, 1), held(*c, 1, 1));
}

}  // namespace
}  // namespace kvbench

namespace kvbench {
namespace {

// --- CaM: evicted values folded into the kept ones that follow ---

float distinct_value(int l, int h, int t, int c) { return 0.1f * t + 0.01f * c + h + 10.0f * l; }

// CaM by hand for one head: a prefill of `prefill` tokens (at most the
// budget), then one token per step; each step over budget evicts the oldest
// entry after the `start` first ones and, when merges(src), adds its value /
// m to the m = min(span, left) kept entries after it.
std::map<int64_t, std::vector<float>> cam_by_hand(int l, int h, int tokens, int budget, int start,
                                                  int span,
                                                  const std::function<bool(int)>& merges) {
  std::vector<std::pair<int64_t, std::vector<float>>> kept;
  for (int t = 0; t < tokens; ++t) {
    std::vector<float> v(kDim);
    for (int c = 0; c < kDim; ++c) v[c] = distinct_value(l, h, t, c);
    kept.emplace_back(t, v);
    if (static_cast<int>(kept.size()) <= budget) continue;
    const auto gone = kept[start];
    kept.erase(kept.begin() + start);
    if (!merges(static_cast<int>(gone.first))) continue;
    const int m = std::min<int>(span, static_cast<int>(kept.size()) - start);
    for (int j = start; j < start + m; ++j)
      for (int c = 0; c < kDim; ++c) kept[j].second[c] += gone.second[c] / static_cast<float>(m);
  }
  return {kept.begin(), kept.end()};
}

std::map<int64_t, std::vector<float>> held_values(const PolicyCache& cache, int l, int h) {
  std::map<int64_t, std::vector<float>> out;
  std::vector<float> k(kDim), v(kDim);
  for (int64_t src : cache.held_sources(l, h)) {
    EXPECT_TRUE(cache.store().find(l, h, static_cast<int32_t>(src), k.data(), v.data()));
    out[src] = v;
  }
  return out;
}

void expect_values_near(const std::map<int64_t, std::vector<float>>& got,
                        const std::map<int64_t, std::vector<float>>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const auto& [src, v] : want) {
    ASSERT_TRUE(got.count(src)) << what << ": src " << src << " not held";
    for (int c = 0; c < kDim; ++c)
      EXPECT_NEAR(got.at(src)[c], v[c], 1e-4f) << what << ": src " << src << " channel " << c;
  }
}

// A `prompt`-token prefill, then one decode step per token up to `end`.
void prompt_then_decode(PolicyCache& c, int32_t prompt, int32_t end, const AttnFn& attention) {
  step(c, 0, prompt, false, default_key, attention, default_query, distinct_value);
  for (int32_t t = prompt; t < end; ++t)
    step(c, t, 1, true, default_key, attention, default_query, distinct_value);
}

TEST(Cam, EvictedValuesSpreadOverTheNextKeptOnesInProportionToAttention) {
  // budget 8 = 2 start tokens + 6 recent; span 3.
  const std::string spec = "cam:budget=8,start=0.25,span=3";
  // Uniform attention: an older token has received at least what any later
  // one has (p = 1), so every evicted token merges.
  {
    auto c = PolicyCache::create(parse_policy_spec(spec), ctx());
    prompt_then_decode(*c, 6, 40, uniform_attention);
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKv; ++h)
        expect_values_near(held_values(*c, l, h),
                           cam_by_hand(l, h, 40, 8, 2, 3, [](int) { return true; }), "uniform");
  }
  // No attention on odd positions: their p is 0 and they vanish unmerged;
  // even ones still outweigh the tokens after them.
  {
    const AttnFn odd_unseen = [](int, int, int, int kp) { return kp % 2 ? 0.0f : 1.0f; };
    auto c = PolicyCache::create(parse_policy_spec(spec), ctx());
    prompt_then_decode(*c, 6, 40, odd_unseen);
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKv; ++h)
        expect_values_near(held_values(*c, l, h),
                           cam_by_hand(l, h, 40, 8, 2, 3, [](int s) { return s % 2 == 0; }),
                           "odd unseen");
  }
  // Plain StreamingLLM keeps the same tokens, values untouched.
  auto s = PolicyCache::create(parse_policy_spec("streaming:budget=8,sinks=2"), ctx());
  auto c = PolicyCache::create(parse_policy_spec(spec), ctx());
  for (PolicyCache* p : {s.get(), c.get()}) prompt_then_decode(*p, 6, 40, uniform_attention);
  EXPECT_EQ(held(*s, 1, 1), held(*c, 1, 1));
  // during=decode: a 20-token prompt evicts 12 entries unmerged; decode
  // steps merge (token i leaves when token i + 6 arrives).
  auto dec = PolicyCache::create(parse_policy_spec(spec + ",during=decode"), ctx());
  prompt_then_decode(*dec, 20, 40, uniform_attention);
  expect_values_near(held_values(*dec, 0, 1),
                     cam_by_hand(0, 1, 40, 8, 2, 3, [](int s) { return s + 6 >= 20; }),
                     "during=decode");
  // merge=off, the control: the same tokens with the values as written.
  auto off = PolicyCache::create(parse_policy_spec(spec + ",merge=off"), ctx());
  prompt_then_decode(*off, 6, 40, uniform_attention);
  EXPECT_EQ(held(*off, 1, 1), held(*c, 1, 1));
  expect_values_near(held_values(*off, 1, 1),
                     cam_by_hand(1, 1, 40, 8, 2, 3, [](int) { return false; }), "merge=off");
}

TEST(Cam, TheMergeProbabilityIsTheAttentionRatio) {
  // Candidates alternate evicted (attention a) / kept (attention 1) with
  // span 1: each evicted token merges into the next one with p = a.
  ASSERT_TRUE(PolicyCache::create(parse_policy_spec("cam:span=1"), ctx())->merges_values());
  for (const float a : {0.0f, 0.25f, 0.5f, 1.0f, 3.0f}) {
    constexpr int32_t kPairs = 4000;
    std::vector<int32_t> src(2 * kPairs), pos(2 * kPairs);
    std::vector<float> stats(2 * kPairs);
    std::vector<uint8_t> kept(2 * kPairs);
    for (int32_t i = 0; i < 2 * kPairs; ++i) {
      src[i] = pos[i] = i;
      kept[i] = i % 2;
      stats[i] = i % 2 ? 1.0f : a;
    }
    ScoreInput in;
    in.n = 2 * kPairs;
    in.src = src.data();
    in.pos = pos.data();
    in.stats = stats.data();
    in.layout.acc = 0;
    in.layout.n = 1;
    in.seed = 7;
    std::vector<ValueMerge> merges;
    plan_value_merges(in, kept.data(), 1, merges);
    for (const ValueMerge& m : merges) {
      EXPECT_EQ(m.to, m.from + 1);
      EXPECT_EQ(m.weight, 1.0f);
    }
    const double rate = static_cast<double>(merges.size()) / kPairs;
    const double p = std::min(1.0f, a);
    // 4000 Bernoulli draws: 4 standard deviations at most 0.032.
    EXPECT_NEAR(rate, p, 4 * std::sqrt(p * (1 - p) / kPairs) + 1e-12) << "attention ratio " << a;
  }
}

TEST(Cam, EntriesAnotherSequenceSharesNeverChange) {
  // Sequence 0 holds a context; sequence 1 continues it. Evictions in
  // sequence 1 drop shared entries from its view but merge into nothing
  // the context holds: sequence 0's values stay as written.
  auto c = PolicyCache::create(parse_policy_spec("cam:budget=8,start=0.25,span=3"), ctx());
  step(*c, 0, 8, false, default_key, uniform_attention, default_query, distinct_value);
  c->seq_cp(0, 1, -1, -1);
  for (int32_t t = 8; t < 30; ++t)
    step(*c, t, 1, true, default_key, uniform_attention, default_query, distinct_value, 1);
  std::vector<float> k(kDim), v(kDim);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h)
      for (int32_t src = 0; src < 8; ++src)
        if (c->store().find(l, h, src, k.data(), v.data()))
          for (int ch = 0; ch < kDim; ++ch)
            ASSERT_EQ(v[ch], distinct_value(l, h, src, ch)) << "src " << src;
  // KIVI's blocks cannot take merged values: refused when the cache is made.
  try {
    PolicyCache::create(parse_policy_spec("cam+kivi2:group=4,residual=8"), ctx());
    ADD_FAILURE() << "cam+kivi2 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("KIVI"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvbench
