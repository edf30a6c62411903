// Policies inside the real forward pass: the seed examples on the tiny model
// (a shared prefix branched into several sequences; a context shift followed
// by correct generation), and on SmolLM2 (skipped when absent) every policy
// with a budget >= the context gives logits bit-identical to `full`.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "model/evaluator.h"
#include "model/llama_model.h"
#include "policies/cache_errors.h"
#include "policies/full_cache.h"
#include "policies/policy_cache.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

using test::some_tokens;

CacheContext context_of(const LlamaModel& m, int64_t tokens) {
  CacheContext c;
  c.shape = m.kv_shape();
  c.rope = m.config().rope;
  c.context_tokens = tokens;
  return c;
}

// Feeds tokens of one sequence in chunks from the cache's next position;
// returns the last token's logits.
std::vector<float> feed(Evaluator& eval, KvCache& cache, int seq,
                        const std::vector<int32_t>& tokens, int32_t start, int chunk,
                        StepPhase phase = StepPhase::Prefill) {
  std::vector<float> logits(eval.model().config().n_vocab);
  for (size_t b = 0; b < tokens.size(); b += chunk) {
    const size_t e = std::min(tokens.size(), b + chunk);
    std::vector<int32_t> pos(e - b);
    std::iota(pos.begin(), pos.end(), static_cast<int32_t>(start + b));
    eval.step(std::span(tokens.data() + b, e - b), pos, seq, phase, cache, Logits::Last,
              logits.data());
  }
  return logits;
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Greedy continuation: logits after each of `steps` decode steps.
std::vector<std::vector<float>> greedy(Evaluator& eval, KvCache& cache, int seq,
                                       std::vector<float> logits, int32_t pos, int steps,
                                       std::vector<int32_t>* tokens = nullptr) {
  std::vector<std::vector<float>> out;
  for (int i = 0; i < steps; ++i) {
    const int32_t t = argmax(logits);
    if (tokens) tokens->push_back(t);
    logits = feed(eval, cache, seq, {t}, pos++, 1, StepPhase::Decode);
    out.push_back(logits);
  }
  return out;
}

TEST(TinyModelPolicies, SharedPrefixBranchesIntoSequencesWithoutCopies) {
  auto model = LlamaModel::load(test::tiny_model_path());
  const int nv = model->config().n_vocab;
  Evaluator eval(*model, 2);
  const auto context = some_tokens(40, nv, 1);
  const std::vector<std::vector<int32_t>> questions = {some_tokens(6, nv, 2), some_tokens(5, nv, 3),
                                                       some_tokens(7, nv, 4)};
  // References: each question after the context in its own full cache.
  std::vector<std::vector<std::vector<float>>> want;
  for (const auto& q : questions) {
    FullCache ref(model->kv_shape());
    feed(eval, ref, 0, context, 0, 16);
    auto l = feed(eval, ref, 0, q, 40, 16);
    auto steps = greedy(eval, ref, 0, l, 40 + static_cast<int32_t>(q.size()), 4);
    steps.insert(steps.begin(), l);
    want.push_back(steps);
  }

  auto cache = PolicyCache::create(parse_policy_spec("full"), context_of(*model, 64));
  feed(eval, *cache, 0, context, 0, 16);
  const MemoryReport before = cache->memory();
  for (int s = 1; s <= 3; ++s) cache->seq_cp(0, s, -1, -1);
  EXPECT_EQ(cache->memory().hot, before.hot) << "seq_cp must share entries, not copy them";
  // Questions prefilled one after another, then decode steps interleaved
  // across the sequences: each must see only its own tokens.
  std::vector<std::vector<float>> logits(3);
  for (int s = 0; s < 3; ++s) logits[s] = feed(eval, *cache, s + 1, questions[s], 40, 16);
  float worst = 0.0f;
  for (int s = 0; s < 3; ++s)
    worst = std::max(worst, test::max_abs_diff(logits[s].data(), want[s][0].data(), nv));
  for (int step = 0; step < 4; ++step)
    for (int s = 0; s < 3; ++s) {
      const int32_t pos = 40 + static_cast<int32_t>(questions[s].size()) + step;
      logits[s] = feed(eval, *cache, s + 1, {argmax(logits[s])}, pos, 1, StepPhase::Decode);
      worst = std::max(worst, test::max_abs_diff(logits[s].data(), want[s][step + 1].data(), nv));
    }
  RecordProperty("max_abs_logit_diff", std::to_string(worst));
  EXPECT_LE(worst, 1e-5f);
  // The prefix is held once: 40 shared + each branch's own 6+4, 5+4, 7+4 tokens.
  const uint64_t heads =
      static_cast<uint64_t>(model->config().n_layers) * model->config().n_kv_heads;
  EXPECT_EQ(cache->memory().hot.entries, heads * (40 + 10 + 9 + 11));
  EXPECT_EQ(cache->pos_max(2), 40 + 5 + 4 - 1);
  // Dropping a branch frees only its own entries.
  cache->seq_rm(1, -1, -1);
  EXPECT_EQ(cache->memory().hot.entries, heads * (40 + 9 + 11));
  EXPECT_EQ(cache->pos_max(1), -1);
  EXPECT_EQ(cache->pos_min(3), 0);
}

TEST(TinyModelPolicies, ContextShiftThenGenerationMatchesTheUnshiftedCache) {
  // Drop the first half of the context, shift the second half back to
  // position 0: with RoPE, attention depends on relative positions only, so
  // generation must match the cache with the first half dropped and no
  // shift (same K/V, every position larger by the same amount).
  auto model = LlamaModel::load(test::tiny_model_path());
  const int nv = model->config().n_vocab;
  // Exact matmuls: with 8-bit activations an ulp of difference in the
  // re-rotated keys can flip a rounding and the tokens diverge.
  Evaluator eval(*model, 2, MatmulMode::Exact);
  const auto prompt = some_tokens(48, nv, 9);
  // f16 keys are re-rounded once when re-rotated; their effect is compared
  // with the effect of f16 storage itself (this random model is sensitive).
  std::vector<std::vector<std::vector<float>>> unshifted_logits;
  for (const char* spec : {"full", "full+f16"}) {
    SCOPED_TRACE(spec);
    auto base = PolicyCache::create(parse_policy_spec(spec), context_of(*model, 128));
    const auto logits = feed(eval, *base, 0, prompt, 0, 16);
    auto unshifted = base->clone();
    unshifted->seq_rm(0, 0, 24);
    auto shifted = base->clone();
    shifted->seq_rm(0, 0, 24);
    shifted->seq_add(0, 24, -1, -24);
    EXPECT_EQ(shifted->pos_min(0), 0);
    EXPECT_EQ(shifted->pos_max(0), 23);
    EXPECT_EQ(shifted->next_position(0), 24);
    std::vector<int32_t> a, b;
    const auto la = greedy(eval, *unshifted, 0, logits, 48, 16, &a);
    const auto lb = greedy(eval, *shifted, 0, logits, 24, 16, &b);
    EXPECT_EQ(a, b) << "the same tokens after the shift";
    float worst = 0.0f;
    for (size_t i = 0; i < la.size(); ++i)
      worst = std::max(worst, test::max_abs_diff(la[i].data(), lb[i].data(), nv));
    RecordProperty(std::string("max_abs_logit_diff_") + spec, std::to_string(worst));
    unshifted_logits.push_back(la);
    if (std::strcmp(spec, "full") == 0) {
      EXPECT_LE(worst, 2e-4f);
    } else {
      float storage = 0.0f;
      for (size_t i = 0; i < la.size(); ++i)
        storage =
            std::max(storage, test::max_abs_diff(la[i].data(), unshifted_logits[0][i].data(), nv));
      EXPECT_LE(worst, storage) << "a shift moves f16 logits more than f16 storage itself does";
    }
  }
  // Quantized keys cannot be re-rotated: a typed error, nothing changed.
  auto q = PolicyCache::create(parse_policy_spec("full+int8"), context_of(*model, 128));
  feed(eval, *q, 0, prompt, 0, 16);
  const auto before = q->memory().hot;
  EXPECT_THROW(q->seq_add(0, 24, -1, -24), UnsupportedOperation);
  EXPECT_EQ(q->memory().hot, before);
  EXPECT_EQ(q->pos_max(0), 47);
}

// Specs whose budget covers a context of up to 4096 tokens: nothing is
// evicted, so logits must be bit-identical to the full cache.
std::vector<std::string> covering_specs() {
  std::vector<std::string> specs;
  for (const auto& c : registry()) {
    if (c.kind != ComponentKind::Scorer) continue;
    // A paging scorer (quest) moves entries to its cold tier whatever its
    // budget: what it attends equals the full cache, in another order
    // (QuestWithACoveringBudgetAttendsEverything).
    if (c.name == std::string_view("quest")) continue;
    specs.push_back(c.param("budget") ? std::string(c.name) + ":budget=4096" : std::string(c.name));
  }
  for (const char* s :
       {"streaming:budget=4096,pos=contiguous", "h2o:budget=1.0", "snapkv:budget=4096,pool=avg",
        "h2o:budget=100000+pyramid", "hybrid:budget=4096+adakv", "window:budget=4096,timing=every",
        "window:budget=4096+offload", "h2o:budget=4096+merge", "full+kivi2:residual=4096",
        "h2o:budget=4096+mixed:full=1", "full+offload:tier=file"})
    specs.push_back(s);
  return specs;
}

void expect_identical_to_full(const LlamaModel& model, const std::vector<int32_t>& prompt,
                              int chunk, int decode_steps) {
  const int nv = model.config().n_vocab;
  Evaluator eval(model, 2);
  FullCache ref(model.kv_shape());
  std::vector<std::vector<float>> want;
  std::vector<int32_t> forced;
  want.push_back(feed(eval, ref, 0, prompt, 0, chunk));
  for (auto& l :
       greedy(eval, ref, 0, want[0], static_cast<int32_t>(prompt.size()), decode_steps, &forced))
    want.push_back(l);
  const int64_t total = static_cast<int64_t>(prompt.size()) + decode_steps;
  for (const std::string& spec : covering_specs()) {
    SCOPED_TRACE(spec);
    CacheContext cc = context_of(model, total);
    auto cache = PolicyCache::create(parse_policy_spec(spec), cc);
    std::vector<std::vector<float>> got;
    got.push_back(feed(eval, *cache, 0, prompt, 0, chunk));
    cache->end_prefill();
    int32_t pos = static_cast<int32_t>(prompt.size());
    for (int32_t t : forced) got.push_back(feed(eval, *cache, 0, {t}, pos++, 1, StepPhase::Decode));
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(0, std::memcmp(got[i].data(), want[i].data(), sizeof(float) * nv))
          << "logits differ at step " << i << " (max diff "
          << test::max_abs_diff(got[i].data(), want[i].data(), nv) << ")";
    EXPECT_EQ(cache->memory().hot.entries,
              static_cast<uint64_t>(total) * model.config().n_layers * model.config().n_kv_heads);
  }
}

TEST(TinyModelPolicies, QuestWithACoveringBudgetAttendsEverything) {
  auto model = LlamaModel::load(test::tiny_model_path());
  const int nv = model->config().n_vocab;
  const auto prompt = some_tokens(70, nv, 5);
  Evaluator eval(*model, 2);
  FullCache ref(model->kv_shape());
  const auto want_prompt = feed(eval, ref, 0, prompt, 0, 32);
  std::vector<int32_t> forced;
  const auto want = greedy(eval, ref, 0, want_prompt, 70, 6, &forced);
  for (const std::string spec : {"quest:budget=4096", "quest:budget=4096,timing=stream,dense=0"}) {
    SCOPED_TRACE(spec);
    // Streaming pages the step's overflow after the step: that token waits
    // for the next step's restore.
    const int32_t waiting = spec.find("stream") != std::string::npos ? 1 : 0;
    auto cache = PolicyCache::create(parse_policy_spec(spec), context_of(*model, 76));
    feed(eval, *cache, 0, prompt, 0, 32);
    cache->end_prefill();
    // Every token is held once, most of them cold; every cold page is restored.
    const MemoryReport m = cache->memory();
    EXPECT_GT(m.cold.entries, 0u);
    int32_t pos = 70;
    for (size_t i = 0; i < forced.size(); ++i) {
      const auto got = feed(eval, *cache, 0, {forced[i]}, pos++, 1, StepPhase::Decode);
      // Same entries attended in another order: equal up to float rounding.
      EXPECT_LT(test::max_abs_diff(got.data(), want[i].data(), nv), 1e-3f) << "decode step " << i;
      for (int l = 0; l < model->config().n_layers; ++l)
        for (int h = 0; h < model->config().n_kv_heads; ++h)
          EXPECT_EQ(cache->store().hot_entries(0, l, h), pos - waiting)
              << "layer " << l << " head " << h;
    }
  }
}

TEST(TinyModelPolicies, EveryPolicyWithBudgetCoveringTheContextMatchesFullBitForBit) {
  auto model = LlamaModel::load(test::tiny_model_path());
  expect_identical_to_full(*model, some_tokens(70, model->config().n_vocab, 5), 32, 6);
}

TEST(SmolLM2Policies, EveryPolicyWithBudgetCoveringTheContextMatchesFullBitForBit) {
  const std::string path = test::smollm2_path();
  if (path.empty())
    GTEST_SKIP() << "SmolLM2 not found: run scripts/setup.sh (or set KVBENCH_MODEL)";
  auto model = LlamaModel::load(path);
  const auto prompt = model->tokenizer().encode(
      "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
      "combined movable metal type, oil-based ink and a wooden press adapted from those used for "
      "wine. Question: who combined movable type with a press? Answer:",
      true, false);
  ASSERT_GE(prompt.size(), 40u);
  expect_identical_to_full(*model, prompt, 16, 3);
}

}  // namespace
}  // namespace kvbench
