// The optimized forward against the naive reference, chunked prefill and
// cached decode against recomputation, and determinism — on the tiny model
// (always) and on SmolLM2 (when models/ has it; set-up fetches it).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "model/evaluator.h"
#include "model/llama_model.h"
#include "policies/full_cache.h"
#include "tests/support/decode_check.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

using test::iota_positions;
using test::max_abs_diff;
using test::some_tokens;

// Logits [n][n_vocab] for every position, prefilled in chunks of `chunk`.
std::vector<float> run_all(const LlamaModel& m, const std::vector<int32_t>& tokens, int chunk,
                           int threads) {
  Evaluator eval(m, threads, MatmulMode::Exact);
  FullCache cache(m.kv_shape());
  const int nv = m.config().n_vocab;
  std::vector<float> all(tokens.size() * nv);
  for (size_t b = 0; b < tokens.size(); b += chunk) {
    const size_t e = std::min(tokens.size(), b + chunk);
    const auto pos = iota_positions(b, e - b);
    eval.step(std::span(tokens.data() + b, e - b), pos, 0, StepPhase::Prefill, cache, Logits::All,
              all.data() + b * nv);
  }
  return all;
}

class TinyModel : public ::testing::TestWithParam<std::pair<bool, bool>> {};

TEST_P(TinyModel, ForwardMatchesNaiveReference) {
  const auto [spm, tied] = GetParam();
  auto model = LlamaModel::load(test::tiny_model_path(spm, tied));
  const auto tokens = some_tokens(48, model->config().n_vocab, 7);
  const auto fast = run_all(*model, tokens, 48, 2);
  std::vector<int64_t> at(tokens.size());
  std::iota(at.begin(), at.end(), 0);
  const auto ref = test::ReferenceLlama(*model).logits(tokens, at);
  const float diff = max_abs_diff(fast.data(), ref.data(), ref.size());
  RecordProperty("max_abs_logit_diff", std::to_string(diff));
  EXPECT_LE(diff, 1e-3f);
  // The random model must not be degenerate: logits vary across the vocabulary.
  const auto [lo, hi] = std::minmax_element(ref.begin(), ref.begin() + model->config().n_vocab);
  EXPECT_GT(*hi - *lo, 1.0f);
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, TinyModel,
                         ::testing::Values(std::pair{false, true}, std::pair{true, false}));

TEST(TinyModelForward, ChunkedPrefillMatchesOneChunk) {
  auto model = LlamaModel::load(test::tiny_model_path());
  const auto tokens = some_tokens(61, model->config().n_vocab, 3);
  const auto one = run_all(*model, tokens, 61, 2);
  for (int chunk : {1, 7, 16}) {
    const auto chunked = run_all(*model, tokens, chunk, 2);
    EXPECT_LE(max_abs_diff(one.data(), chunked.data(), one.size()), 1e-4f) << "chunk " << chunk;
  }
}

TEST(TinyModelForward, CachedDecodeMatchesRecomputeAtEachOf32Steps) {
  auto model = LlamaModel::load(test::tiny_model_path());
  const auto c = test::check_decode_from_random_prompt<test::ReferenceLlama>(*model, 9, 32);
  EXPECT_LE(c.worst, 1e-3f);
  EXPECT_EQ(c.cached, static_cast<int32_t>(c.tokens));
}

TEST(TinyModelForward, SameInputsAndThreadsGiveBitIdenticalLogits) {
  auto model = LlamaModel::load(test::tiny_model_path());
  const auto tokens = some_tokens(40, model->config().n_vocab, 5);
  for (int threads : {1, 2, 3}) {
    const auto a = run_all(*model, tokens, 16, threads);
    const auto b = run_all(*model, tokens, 16, threads);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
        << threads << " threads";
  }
}

TEST(TinyModelForward, FullCacheBytesAreExact) {
  auto model = LlamaModel::load(test::tiny_model_path());
  const auto& c = model->config();
  Evaluator eval(*model, 1, MatmulMode::Exact);
  FullCache cache(model->kv_shape());
  const auto tokens = some_tokens(13, c.n_vocab, 2);
  eval.step(tokens, iota_positions(0, 13), 0, StepPhase::Prefill, cache, Logits::None, nullptr);
  EXPECT_EQ(cache.kv_bytes(),
            static_cast<uint64_t>(c.n_layers) * c.n_kv_heads * c.head_dim * 13 * 2 * 4);
}

// --- SmolLM2 (skipped when models/ does not have it) ---

class SmolLM2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string p = test::smollm2_path();
    if (!p.empty()) model_ = LlamaModel::load(p).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override {
    if (!model_) GTEST_SKIP() << "SmolLM2 not found: run scripts/setup.sh (or set KVBENCH_MODEL)";
  }
  static LlamaModel* model_;
};
LlamaModel* SmolLM2::model_ = nullptr;

TEST_F(SmolLM2, ForwardMatchesNaiveReferenceOn64Tokens) {
  const auto ids = model_->tokenizer().encode(
      "The history of the printing press begins in the fifteenth century, when Johannes "
      "Gutenberg combined movable metal type, oil-based ink and a wooden press adapted from "
      "those used for wine. Within fifty years, presses were running in more than two hundred "
      "cities across Europe, and the price of books fell sharply. Printers soon learned that "
      "almanacs, pamphlets and news sheets sold faster than bibles.",
      false, false);
  std::vector<int32_t> tokens(ids.begin(), ids.begin() + std::min<size_t>(64, ids.size()));
  ASSERT_EQ(tokens.size(), 64u);
  const int nv = model_->config().n_vocab;
  const auto fast = run_all(*model_, tokens, 64, 2);
  const auto ref = test::ReferenceLlama(*model_).logits(tokens, {0, 31, 63});
  float diff = 0.0f;
  for (int i = 0; i < 3; ++i) {
    const int64_t t = std::array<int64_t, 3>{0, 31, 63}[i];
    diff = std::max(diff, max_abs_diff(fast.data() + t * nv, ref.data() + i * nv, nv));
  }
  RecordProperty("max_abs_logit_diff", std::to_string(diff));
  std::printf("SmolLM2 64-token prompt: max |logit - reference| = %.3g\n", diff);
  EXPECT_LE(diff, 1e-3f);
}

TEST_F(SmolLM2, SameInputsAndThreadsGiveBitIdenticalLogits) {
  const auto ids =
      model_->tokenizer().encode("Determinism means the same bits every time.", false, false);
  const auto a = run_all(*model_, ids, 5, 2);
  const auto b = run_all(*model_, ids, 5, 2);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

}  // namespace
}  // namespace kvbench
