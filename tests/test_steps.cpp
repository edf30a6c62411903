// model/steps.h, the one copy of the loops over Evaluator::step: prefill,
// next-token NLL and decoding give exactly what hand-written steps give, ask
// the cache for positions, and stop where they say — on the tiny model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "model/common/error.h"
#include "model/evaluator.h"
#include "model/llama_model.h"
#include "model/steps.h"
#include "policies/full_cache.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

// A full cache that places stream position p at p + shift and records the
// positions of every step (a stand-in for a cache that renumbers).
class ShiftedCache final : public KvCache {
 public:
  ShiftedCache(const KvShape& s, int32_t shift) : inner_(s), shift_(shift) {}
  const KvShape& shape() const override { return inner_.shape(); }
  void begin_step(const StepInfo& info) override {
    seen.insert(seen.end(), info.positions.begin(), info.positions.end());
    seqs.push_back(info.seq);
    StepInfo one = info;
    one.seq = 0;  // the full cache holds one sequence
    inner_.begin_step(one);
  }
  void append(int layer, const float* k, const float* v) override { inner_.append(layer, k, v); }
  const KvHeadView& view(int layer, int kv_head) override { return inner_.view(layer, kv_head); }
  void end_step() override { inner_.end_step(); }
  int32_t position_for(int seq, int32_t stream_pos) const override { return stream_pos + shift_; }
  std::vector<int32_t> seen;
  std::vector<int> seqs;

 private:
  FullCache inner_;
  int32_t shift_;
};

std::vector<int32_t> range(int32_t begin, int32_t n) {
  std::vector<int32_t> v(n);
  for (int32_t i = 0; i < n; ++i) v[i] = begin + i;
  return v;
}

class Steps : public ::testing::Test {
 protected:
  void SetUp() override {
    model = LlamaModel::load(test::tiny_model_path());
    nv = model->config().n_vocab;
    tokens = test::some_tokens(21, nv, 5);
  }
  std::unique_ptr<LlamaModel> model;
  int nv = 0;
  std::vector<int32_t> tokens;
};

TEST(FixedChunks, CutsEveryChunkTokens) {
  EXPECT_EQ(fixed_chunks(10, 4), (std::vector<Span>{{0, 4}, {4, 8}, {8, 10}}));
  EXPECT_EQ(fixed_chunks(8, 4), (std::vector<Span>{{0, 4}, {4, 8}}));
  EXPECT_TRUE(fixed_chunks(0, 4).empty());
  EXPECT_THROW(fixed_chunks(5, 0), InputError);
}

TEST_F(Steps, PrefillIsTheHandWrittenSteps) {
  const std::vector<Span> chunks = {{0, 8}, {8, 9}, {9, 21}};
  std::vector<float> want(nv), got(nv);
  {
    Evaluator eval(*model, 2, MatmulMode::Exact);
    FullCache cache(model->kv_shape());
    for (size_t i = 0; i < chunks.size(); ++i) {
      const Span s = chunks[i];
      const auto pos = range(static_cast<int32_t>(s.begin), static_cast<int32_t>(s.size()));
      const bool last = i + 1 == chunks.size();
      eval.step(std::span(tokens).subspan(s.begin, s.size()), pos, 0, StepPhase::Prefill, cache,
                last ? Logits::Last : Logits::None, last ? want.data() : nullptr);
    }
  }
  Evaluator eval(*model, 2, MatmulMode::Exact);
  FullCache cache(model->kv_shape());
  std::vector<size_t> called;
  prefill(eval, cache, tokens, chunks,
          {.last_logits = got.data(), .after_chunk = [&](size_t i, const float* logits) {
             EXPECT_EQ(logits, nullptr);  // not asked for every chunk's logits
             called.push_back(i);
           }});
  EXPECT_EQ(called, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)));
}

TEST_F(Steps, PrefillAsksTheCacheForPositionsAndResumesAtFirst) {
  Evaluator eval(*model, 1, MatmulMode::Exact);
  ShiftedCache cache(model->kv_shape(), 100);
  const std::vector<Span> chunks = fixed_chunks(10, 4);
  // Chunk 0 is "already in": only chunks 1 and 2 run, at stream positions
  // 5 + [4, 10) shifted by the cache to 109..114, in sequence 3.
  prefill(eval, cache, std::span(tokens).first(10), chunks, {.first = 1, .seq = 3, .start = 5});
  EXPECT_EQ(cache.seen, range(109, 6));
  EXPECT_EQ(cache.seqs, (std::vector<int>{3, 3}));
}

TEST_F(Steps, PrefillNllIsTheLogSoftmaxOfEveryChunksRows) {
  const std::vector<Span> chunks = fixed_chunks(21, 6);
  const int64_t skip = 4;
  // By hand: every chunk's logits, then -log p(next) in double.
  double want = 0.0;
  int64_t count = 0;
  {
    Evaluator eval(*model, 2, MatmulMode::Exact);
    FullCache cache(model->kv_shape());
    std::vector<float> all(21 * static_cast<size_t>(nv));
    for (const Span& s : chunks) {
      const auto pos = range(static_cast<int32_t>(s.begin), static_cast<int32_t>(s.size()));
      eval.step(std::span(tokens).subspan(s.begin, s.size()), pos, 0, StepPhase::Prefill, cache,
                Logits::All, all.data() + s.begin * nv);
    }
    for (int64_t i = skip; i + 1 < 21; ++i) {
      const float* row = all.data() + i * nv;
      double z = 0.0, max = row[0];
      for (int v = 0; v < nv; ++v) max = std::max<double>(max, row[v]);
      for (int v = 0; v < nv; ++v) z += std::exp(row[v] - max);
      want += max + std::log(z) - row[tokens[i + 1]];
      ++count;
    }
  }
  Evaluator eval(*model, 2, MatmulMode::Exact);
  FullCache cache(model->kv_shape());
  NllSum acc;
  int chunks_seen = 0;
  prefill_nll(eval, cache, tokens, chunks, skip, acc, [&](size_t) { ++chunks_seen; });
  EXPECT_EQ(chunks_seen, 4);
  EXPECT_EQ(acc.count, count);
  EXPECT_NEAR(acc.sum, want, 1e-9 * std::abs(want));
  EXPECT_GT(acc.mean(), 0.0);
}

TEST_F(Steps, DecodeIsGreedyAndStopsWhereItSays) {
  const std::vector<Span> chunks = fixed_chunks(21, 8);
  auto prefilled = [&](Evaluator& eval, FullCache& cache) {
    std::vector<float> logits(nv);
    prefill(eval, cache, tokens, chunks, {.last_logits = logits.data()});
    return logits;
  };
  // By hand: argmax, step, argmax, ...
  std::vector<int32_t> want;
  {
    Evaluator eval(*model, 1, MatmulMode::Exact);
    FullCache cache(model->kv_shape());
    std::vector<float> logits = prefilled(eval, cache);
    for (int32_t p = 21; p < 26; ++p) {
      const int32_t next = argmax(logits.data(), nv);
      want.push_back(next);
      const int32_t t[1] = {next}, q[1] = {p};
      eval.step(t, q, 0, StepPhase::Decode, cache, Logits::Last, logits.data());
    }
  }
  {
    Evaluator eval(*model, 1, MatmulMode::Exact);
    FullCache cache(model->kv_shape());
    std::vector<float> logits = prefilled(eval, cache);
    std::vector<int32_t> streamed;
    const Decoded d = decode(
        eval, cache, logits,
        {.start = 21, .max_new_tokens = 5, .on_token = [&](int32_t t) { streamed.push_back(t); }});
    ASSERT_FALSE(d.stopped_at_eog) << "the tiny model hit its end token; pick another prompt";
    EXPECT_EQ(d.tokens, want);
    EXPECT_EQ(streamed, want);
    EXPECT_EQ(d.steps, 4);  // the fifth token needs no step
    EXPECT_FALSE(d.hit_context);
  }
  {
    // The context: a step at stream position 22 would pass n_ctx = 22.
    Evaluator eval(*model, 1, MatmulMode::Exact);
    FullCache cache(model->kv_shape());
    std::vector<float> logits = prefilled(eval, cache);
    const Decoded d = decode(eval, cache, logits, {.start = 21, .max_new_tokens = 5, .n_ctx = 22});
    EXPECT_TRUE(d.hit_context);
    EXPECT_EQ(d.steps, 1);
    EXPECT_EQ(d.tokens, std::vector<int32_t>(want.begin(), want.begin() + 2));
  }
  {
    // A pick that says end-of-generation: nothing returned, no step.
    Evaluator eval(*model, 1, MatmulMode::Exact);
    ShiftedCache cache(model->kv_shape(), 0);
    std::vector<float> logits(nv, 0.0f);
    const int32_t eos = model->tokenizer().eos();
    ASSERT_GE(eos, 0);
    const Decoded d = decode(eval, cache, logits,
                             {.max_new_tokens = 5, .pick = [&](const float*) { return eos; }});
    EXPECT_TRUE(d.stopped_at_eog);
    EXPECT_TRUE(d.tokens.empty());
    EXPECT_EQ(d.steps, 0);
    EXPECT_TRUE(cache.seen.empty());
    // And max_new_tokens = 0 picks nothing at all.
    int picks = 0;
    decode(eval, cache, logits, {.max_new_tokens = 0, .pick = [&](const float*) {
                                   ++picks;
                                   return 0;
                                 }});
    EXPECT_EQ(picks, 0);
  }
}

TEST_F(Steps, DecodeStepsAtTheCachesPositions) {
  Evaluator eval(*model, 1, MatmulMode::Exact);
  ShiftedCache cache(model->kv_shape(), 7);
  std::vector<float> logits(nv);
  prefill(eval, cache, std::span(tokens).first(4), fixed_chunks(4, 4),
          {.seq = 2, .last_logits = logits.data()});
  int32_t plain = 0;  // a token that does not end generation
  while (model->tokenizer().is_end_of_generation(plain)) ++plain;
  const Decoded d = decode(
      eval, cache, logits,
      {.seq = 2, .start = 4, .max_new_tokens = 3, .pick = [&](const float*) { return plain; }});
  EXPECT_EQ(d.steps, 2);
  // Prefill at 7..10, then the decode steps at stream 4, 5 -> 11, 12.
  EXPECT_EQ(cache.seen, range(7, 6));
  EXPECT_EQ(cache.seqs, (std::vector<int>{2, 2, 2}));
}

}  // namespace
}  // namespace kvbench
