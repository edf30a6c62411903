// KVzip (policies/scorers/kvzip.cpp, policies/reconstruction.h,
// harness/reconstruction.h): the reconstruction pass's restricted-softmax
// maxima against the long way, the pass leaving the cache exactly as it
// was, the global selection's count and set, the template head scored 0,
// the sinks kept, and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "datasets/prompt.h"
#include "harness/inference.h"
#include "harness/reconstruction.h"
#include "model/common/error.h"
#include "model/steps.h"
#include "policies/policy_cache.h"
#include "policies/reconstruction.h"
#include "policies/state_io.h"
#include "tests/support/random_kvq.h"
#include "tests/support/reference_llama.h"
#include "tests/support/state_round_trip.h"

namespace kvbench {
namespace {

constexpr int kLayers = 2, kKv = 2, kQ = 4, kDim = 8, kGroup = kQ / kKv;
constexpr int kPrompt = 21, kHead = 7, kSinks = 4;

// Random K/V/Q of `tokens` tokens; queries doubled: peaked softmaxes, not
// near-uniform ones.
struct Rows : test::RandomKvq {
  Rows(int tokens, uint32_t seed) : RandomKvq({kLayers, kKv, kQ, kDim}, tokens, seed, 2.0f) {}
};

// Rows [begin, end) of `r` as one step of `seq` at positions start + i.
void step(KvCache& cache, const Rows& r, int begin, int end, int seq, int start) {
  std::vector<int32_t> pos(end - begin), tok(end - begin, 0);
  std::iota(pos.begin(), pos.end(), start);
  StepInfo info;
  info.seq = seq;
  info.positions = pos;
  info.tokens = tok;
  cache.begin_step(info);
  for (int l = 0; l < kLayers; ++l) {
    cache.append(l, r.k[l].data() + begin * kKv * kDim, r.v[l].data() + begin * kKv * kDim);
    if (cache.attention_request(l).queries)
      cache.observe_queries(l, r.q[l].data() + begin * kQ * kDim, pos);
    for (int h = 0; h < kKv; ++h) cache.view(l, h);
  }
  cache.end_step();
}

std::unique_ptr<PolicyCache> prompt_cache(const std::string& spec, const Rows& prompt) {
  CacheContext ctx;
  ctx.shape = {kLayers, kKv, kQ, kDim};
  ctx.rope.n_dims = kDim;
  ctx.context_tokens = kPrompt;
  auto cache = PolicyCache::create(parse_policy_spec(spec), ctx);
  step(*cache, prompt, 0, kPrompt, 0, 0);
  return cache;
}

// The passes of the synthetic prompt: spans [7, 13), [13, 19), [19, 21),
// each with 5 rows of its own.
constexpr int kPassRows = 5;
const int64_t kSpans[][2] = {{7, 13}, {13, 19}, {19, 21}};

// The long way: max over passes, rows and the group of the softmax over
// K' = sinks + span + the pass's rows up to the query's, in double.
std::vector<double> reference(const Rows& prompt, const std::vector<Rows>& passes, int l, int h) {
  std::vector<double> best(kPrompt, 0.0);
  for (size_t p = 0; p < passes.size(); ++p) {
    const int64_t b = kSpans[p][0], e = kSpans[p][1];
    std::vector<const float*> keys;
    for (int64_t j = 0; j < std::min<int64_t>(kSinks, b); ++j)
      keys.push_back(prompt.key(l, static_cast<int>(j), h));
    for (int64_t j = b; j < e; ++j) keys.push_back(prompt.key(l, static_cast<int>(j), h));
    const size_t own = keys.size();
    for (int t = 0; t < kPassRows; ++t) keys.push_back(passes[p].key(l, t, h));
    for (int t = 0; t < kPassRows; ++t)
      for (int g = 0; g < kGroup; ++g) {
        const float* q = passes[p].query(l, t, h * kGroup + g);
        const size_t seen = own + t + 1;
        std::vector<double> logit(seen);
        double top = -INFINITY, sum = 0.0;
        for (size_t j = 0; j < seen; ++j) {
          double dot = 0.0;
          for (int c = 0; c < kDim; ++c) dot += double{q[c]} * keys[j][c];
          logit[j] = dot / std::sqrt(double{kDim});
          top = std::max(top, logit[j]);
        }
        for (double x : logit) sum += std::exp(x - top);
        const size_t first = own - (e - b);
        for (int64_t j = b; j < e; ++j)
          best[j] = std::max(best[j], std::exp(logit[first + (j - b)] - top) / sum);
      }
  }
  return best;
}

// Runs the passes by hand through a recorder (on sequence 1, in two steps
// each: the second step's rows see the first's), rolling back after each.
std::vector<std::vector<float>> record(PolicyCache& cache, const std::vector<Rows>& passes) {
  ReconstructionRecorder rec(cache, kPrompt, kSinks);
  for (size_t p = 0; p < passes.size(); ++p) {
    const auto cp = cache.checkpoint();
    cache.pause_eviction(true);
    cache.seq_cp(0, 1, -1, -1);
    rec.set_span(kSpans[p][0], kSpans[p][1]);
    step(rec, passes[p], 0, 3, 1, kPrompt);
    step(rec, passes[p], 3, kPassRows, 1, kPrompt + 3);
    cache.pause_eviction(false);
    cache.rollback(cp);
  }
  return rec.tables();
}

TEST(Kvzip, RecordedScoresAreTheRestrictedSoftmaxMaxima) {
  const Rows prompt(kPrompt, 3);
  std::vector<Rows> passes;
  for (uint32_t p = 0; p < 3; ++p) passes.emplace_back(kPassRows, 10 + p);
  auto cache = prompt_cache("kvzip:budget=0.5,chunk=6", prompt);
  const auto tables = record(*cache, passes);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      const auto want = reference(prompt, passes, l, h);
      const auto& got = tables[l * kKv + h];
      ASSERT_EQ(got.size(), static_cast<size_t>(kPrompt));
      for (int j = 0; j < kPrompt; ++j) {
        SCOPED_TRACE(testing::Message() << "layer " << l << " head " << h << " token " << j);
        // The template head (sinks included) is never reconstructed.
        if (j < kHead) EXPECT_EQ(got[j], 0.0f);
        if (j >= kHead) EXPECT_GT(got[j], 0.0f);
        EXPECT_NEAR(got[j], want[j], 1e-6 + 1e-5 * want[j]);
      }
    }
}

TEST(Kvzip, ThePassLeavesTheCacheExactlyAsItWas) {
  const Rows prompt(kPrompt, 3);
  std::vector<Rows> passes;
  for (uint32_t p = 0; p < 3; ++p) passes.emplace_back(kPassRows, 10 + p);
  auto cache = prompt_cache("kvzip:budget=0.5,chunk=6", prompt);
  const std::string before = test::state_bytes(*cache);
  record(*cache, passes);
  EXPECT_EQ(test::state_bytes(*cache), before);
  EXPECT_EQ(cache->store().known_sequences(), 1u);
  EXPECT_EQ(cache->next_position(0), kPrompt);
}

// Distinct random scores; the template head [kSinks, kHead) at 0 as the pass leaves it.
std::vector<std::vector<float>> some_scores(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.01f, 1.0f);
  std::vector<std::vector<float>> t(kLayers * kKv, std::vector<float>(kPrompt));
  for (auto& row : t)
    for (int j = 0; j < kPrompt; ++j) row[j] = j < kHead ? 0.0f : u(rng);
  return t;
}

void give(PolicyCache& cache, const std::vector<std::vector<float>>& t) {
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) cache.set_importance(l, h, t[l * kKv + h]);
}

TEST(Kvzip, GlobalSelectionKeepsKvpressCountOverLayersAndHeads) {
  const Rows prompt(kPrompt, 3);
  const auto scores = some_scores(5);
  const int64_t all = int64_t{kLayers} * kKv * kPrompt;  // 84
  for (const double b : {0.5, 0.7, 0.3}) {
    SCOPED_TRACE(testing::Message() << "budget " << b);
    auto cache = prompt_cache("kvzip:budget=" + std::to_string(b) + "+global", prompt);
    give(*cache, scores);
    cache->end_prefill();
    // kvpress: prune int(N r) of N = L H n, r = 1 - b (0.7: 84 - 25 = 59,
    // where a per-head round(0.7 x 21) = 15 would keep 60).
    const int64_t keep = all - static_cast<int64_t>(all * (1.0 - b));
    // The long way: the keep highest over every layer and head, sinks first.
    std::vector<std::pair<float, int>> ranked;  // (priority, flat index)
    for (int i = 0; i < all; ++i) {
      const int j = i % kPrompt;
      ranked.emplace_back(j < kSinks ? INFINITY : scores[i / kPrompt][j], i);
    }
    std::sort(ranked.begin(), ranked.end(), std::greater<>());
    std::set<int> want;
    for (int64_t i = 0; i < keep; ++i) want.insert(ranked[i].second);
    std::set<int> got;
    std::set<size_t> per_head_counts;
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKv; ++h) {
        const auto held = cache->held_sources(l, h);
        per_head_counts.insert(held.size());
        for (int64_t s : held) got.insert(static_cast<int>((l * kKv + h) * kPrompt + s));
        for (int s = 0; s < kSinks; ++s) EXPECT_TRUE(cache->holds(l, h, s)) << "sink " << s;
        // Scored 0, the template head goes before any reconstructed entry.
        for (int s = kSinks; s < kHead; ++s) EXPECT_FALSE(cache->holds(l, h, s));
      }
    EXPECT_EQ(static_cast<int64_t>(got.size()), keep);
    EXPECT_EQ(got, want);
    EXPECT_GT(per_head_counts.size(), 1u) << "heads keep different counts";
  }
}

TEST(Kvzip, UniformKeepsTheBudgetPerHeadByTheSameScores) {
  const Rows prompt(kPrompt, 3);
  const auto scores = some_scores(6);
  auto cache = prompt_cache("kvzip:budget=9", prompt);
  give(*cache, scores);
  cache->end_prefill();
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      std::vector<int> order(kPrompt);
      std::iota(order.begin(), order.end(), 0);
      const auto& s = scores[l * kKv + h];
      std::sort(order.begin(), order.end(), [&](int a, int b) {
        const float pa = a < kSinks ? INFINITY : s[a], pb = b < kSinks ? INFINITY : s[b];
        return pa > pb;
      });
      std::vector<int64_t> want(order.begin(), order.begin() + 9);
      std::sort(want.begin(), want.end());
      EXPECT_EQ(cache->held_sources(l, h), want);
    }
}

TEST(Kvzip, PassesCutThePromptAfterItsHead) {
  std::vector<int32_t> prompt(40);
  std::iota(prompt.begin(), prompt.end(), 100);
  const std::vector<int32_t> suffix{7, 8}, first{1, 2, 3}, next{4, 5};
  const auto passes = reconstruction_passes(prompt, 5, suffix, first, next, 16);
  ASSERT_EQ(passes.size(), 3u);  // [5, 21), [21, 37), [37, 40)
  EXPECT_EQ(passes[0].begin, 5);
  EXPECT_EQ(passes[0].end, 21);
  EXPECT_EQ(passes[2].begin, 37);
  EXPECT_EQ(passes[2].end, 40);
  std::vector<int32_t> want0{1, 2, 3, 7, 8};
  for (int32_t t = 105; t < 121; ++t) want0.push_back(t);
  EXPECT_EQ(passes[0].ids, want0);
  // Later: the "starting with" prompt, the previous chunk's last 8 ids.
  std::vector<int32_t> want2{4, 5};
  for (int32_t t = 129; t < 137; ++t) want2.push_back(t);
  want2.insert(want2.end(), {7, 8, 137, 138, 139});
  EXPECT_EQ(passes[2].ids, want2);
  EXPECT_TRUE(
      reconstruction_passes(std::span(prompt).first(5), 5, suffix, first, next, 16).empty());
}

TEST(Kvzip, RefusesWithoutThePassOrWithAPartThatReallocates) {
  const Rows prompt(kPrompt, 3);
  auto cache = prompt_cache("kvzip:budget=9", prompt);
  try {
    cache->end_prefill();
    FAIL() << "evicted without scores";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("kvzip"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_policy_spec("kvzip:budget=0.5+global+critical"), InputError);
}

// The harness's pass on a real (tiny) model: the template head is found,
// every reconstructed entry scores, the cache is left as it was (the next
// step's logits are bit-identical), and the budget is kept afterwards.
TEST(Kvzip, HarnessPassOnTheTinyModel) {
  auto model = LlamaModel::load(test::tiny_model_path());
  Evaluator eval(*model, 2);
  const TemplateIds tmpl = chat_template_ids(*model);
  std::vector<int32_t> tokens = tmpl.head;
  const auto body = test::some_tokens(45, model->config().n_vocab, 9);
  tokens.insert(tokens.end(), body.begin(), body.end());
  const int64_t n = static_cast<int64_t>(tokens.size());
  const CacheContext ctx = cache_context(*model, n);
  const auto spec = parse_policy_spec("kvzip:budget=0.5,chunk=16");
  auto cache = PolicyCache::create(spec, ctx);
  prefill(eval, *cache, tokens, fixed_chunks(n, 16));
  auto untouched = cache->clone();
  run_reconstruction(eval, *cache, tokens, 8);
  const KvShape& s = model->kv_shape();
  std::vector<float> ka(s.head_dim), va(s.head_dim), kb(s.head_dim), vb(s.head_dim);
  for (int l = 0; l < s.n_layers; ++l)
    for (int h = 0; h < s.n_kv_heads; ++h) {
      ASSERT_EQ(cache->held_sources(l, h), untouched->held_sources(l, h));
      for (int64_t t = 0; t < n; ++t) {
        ASSERT_TRUE(cache->store().find(l, h, static_cast<int32_t>(t), ka.data(), va.data()));
        ASSERT_TRUE(untouched->store().find(l, h, static_cast<int32_t>(t), kb.data(), vb.data()));
        ASSERT_EQ(ka, kb);
        ASSERT_EQ(va, vb);
      }
    }
  EXPECT_EQ(cache->store().tokens_seen(), n);
  EXPECT_EQ(cache->store().known_sequences(), 1u);
  std::vector<float> la(model->config().n_vocab), lb(la.size());
  const std::vector<int32_t> next{tokens[5]};
  prefill(eval, *cache->clone(), next, fixed_chunks(1, 1),
          {.start = static_cast<int32_t>(n), .last_logits = la.data()});
  prefill(eval, *untouched, next, fixed_chunks(1, 1),
          {.start = static_cast<int32_t>(n), .last_logits = lb.data()});
  EXPECT_EQ(la, lb);
  cache->end_prefill();
  const int64_t head = static_cast<int64_t>(tmpl.head.size());
  const int32_t budget = static_cast<int32_t>(std::lround(0.5 * n));
  for (int l = 0; l < s.n_layers; ++l)
    for (int h = 0; h < s.n_kv_heads; ++h) {
      EXPECT_EQ(cache->held_sources(l, h).size(), static_cast<size_t>(budget));
      for (int t = 0; t < std::min<int64_t>(4, head); ++t) EXPECT_TRUE(cache->holds(l, h, t));
      // The template head after the sinks scored 0: evicted first.
      for (int64_t t = 4; t < head; ++t) EXPECT_FALSE(cache->holds(l, h, t));
    }
}

}  // namespace
}  // namespace kvbench
