// Cached greedy decode against a naive reference that recomputes the whole
// sequence at every step: the check every forward (LLaMA, Gemma 3) gets.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "model/evaluator.h"
#include "policies/full_cache.h"
#include "tests/support/reference_llama.h"

namespace kvbench::test {

// Prefills `tokens` into `cache`, then `steps` times compares the last
// logits with ref.logits(tokens, {last}) (a gtest failure naming the step
// beyond `tol`) and decodes the argmax, appending it to `tokens`. Returns the
// largest difference seen; records it as the test property
// max_abs_logit_diff_decode.
template <class Reference>
float check_decode_against_recompute(const LlamaModel& model, const Reference& ref,
                                     std::vector<int32_t>& tokens, int steps, FullCache& cache,
                                     float tol = 1e-3f) {
  const int nv = model.config().n_vocab;
  Evaluator eval(model, 2, MatmulMode::Exact);
  std::vector<int32_t> pos(tokens.size());
  std::iota(pos.begin(), pos.end(), 0);
  std::vector<float> logits(nv);
  eval.step(tokens, pos, 0, StepPhase::Prefill, cache, Logits::Last, logits.data());
  float worst = 0.0f;
  for (int step = 0; step < steps; ++step) {
    const auto expect = ref.logits(tokens, {static_cast<int64_t>(tokens.size()) - 1});
    worst = std::max(worst, max_abs_diff(logits.data(), expect.data(), nv));
    if (worst > tol) {
      ADD_FAILURE() << "step " << step << ": logits differ by " << worst << " > " << tol;
      break;
    }
    const int32_t next =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    tokens.push_back(next);
    const int32_t p = static_cast<int32_t>(tokens.size()) - 1;
    eval.step(std::span(&tokens.back(), 1), std::span(&p, 1), 0, StepPhase::Decode, cache,
              Logits::Last, logits.data());
  }
  ::testing::Test::RecordProperty("max_abs_logit_diff_decode", std::to_string(worst));
  return worst;
}

// The check above from `n_prompt` random tokens (some_tokens, seed 11) in a
// new FullCache, against a Reference of `model`.
struct DecodeCheck {
  float worst = 0.0f;  // the largest logit difference
  size_t tokens = 0;   // prompt and decoded tokens
  int32_t cached = 0;  // tokens the cache holds at the end
};
template <class Reference>
DecodeCheck check_decode_from_random_prompt(const LlamaModel& model, int n_prompt, int steps) {
  const Reference ref(model);
  FullCache cache(model.kv_shape());
  std::vector<int32_t> tokens = some_tokens(n_prompt, model.config().n_vocab, 11);
  const float worst = check_decode_against_recompute(model, ref, tokens, steps, cache);
  return {worst, tokens.size(), cache.n_tokens()};
}

// Logits [n][n_vocab] for every position of `tokens`, prefilled into a new
// FullCache in steps of `chunk` tokens (2 threads).
inline std::vector<float> logits_at_every_position(const LlamaModel& m,
                                                   const std::vector<int32_t>& tokens, int chunk,
                                                   MatmulMode mode = MatmulMode::Exact) {
  Evaluator eval(m, 2, mode);
  FullCache cache(m.kv_shape());
  const int nv = m.config().n_vocab;
  std::vector<float> all(tokens.size() * nv);
  for (size_t b = 0; b < tokens.size(); b += chunk) {
    const size_t e = std::min(tokens.size(), b + chunk);
    eval.step(std::span(tokens.data() + b, e - b), iota_positions(b, e - b), 0, StepPhase::Prefill,
              cache, Logits::All, all.data() + b * nv);
  }
  return all;
}

// The forward check every family's tiny files get: 12 random tokens (seed
// 3), the exact forward in one chunk and in chunks of `small_chunk` within
// 1e-3 of `Reference`'s logits at every position, logits that vary (a
// spread over 1), and 8-bit activations within `quantized_bound` of the
// largest reference logit. `what` names the file in failures.
template <class Reference>
void expect_forward_matches_reference(const LlamaModel& model, const std::string& what,
                                      int small_chunk, float quantized_bound) {
  const auto tokens = some_tokens(12, model.config().n_vocab, 3);
  std::vector<int64_t> at(tokens.size());
  for (size_t i = 0; i < at.size(); ++i) at[i] = static_cast<int64_t>(i);
  const auto ref = Reference(model).logits(tokens, at);
  for (int chunk : {12, small_chunk}) {
    const auto fast = logits_at_every_position(model, tokens, chunk);
    EXPECT_LE(max_abs_diff(fast.data(), ref.data(), ref.size()), 1e-3f)
        << what << ", chunk " << chunk;
  }
  const auto [lo, hi] = std::minmax_element(ref.begin(), ref.end());
  EXPECT_GT(*hi - *lo, 1.0f) << what << ": logits hardly vary";
  const float top = std::max(std::fabs(*lo), std::fabs(*hi));
  const auto quantized = logits_at_every_position(model, tokens, 12, MatmulMode::Quantized);
  EXPECT_LE(max_abs_diff(quantized.data(), ref.data(), ref.size()), quantized_bound * top) << what;
}

}  // namespace kvbench::test
