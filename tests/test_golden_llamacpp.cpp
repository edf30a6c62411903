// Agreement with llama.cpp (the oracle) on SmolLM2: token ids of the golden
// prompts, and next-token top-1 and top-32 logits. The figures were produced
// by llama.cpp outside this repository (tests/data/golden_logits_smollm2.json
// names the build); only the numbers are committed.
//
// llama.cpp multiplies Q4_1 weights with activations quantized to 8 bits per
// block of 32. kvbench's Exact mode keeps activations in f32 (and matches a
// naive double-precision reference to ~5e-5): its logits differ from
// llama.cpp's by that quantization noise, 0.2-0.7. Quantized mode (the
// default) quantizes activations as llama.cpp does; see below for what that
// does and does not tighten. Top-1 can only differ where llama.cpp's own
// top-2 margin is of that size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>

#include <nlohmann/json.hpp>

#include "harness/perplexity.h"
#include "model/evaluator.h"
#include "model/llama_model.h"
#include "policies/full_cache.h"
#include "tests/support/golden.h"

namespace kvbench {
namespace {

// Every golden prompt's last-token logits against llama.cpp's top 32; where
// llama.cpp's top-1 leads by more than `margin_for_top1`, the winner must be
// the same.
test::TopAgreement agreement(const LlamaModel& model, MatmulMode mode, float margin_for_top1) {
  return test::top_agreement(
      model, mode, test::golden_json("golden_logits_smollm2.json"), "top", margin_for_top1,
      mode == MatmulMode::Exact ? "llama.cpp agreement (Exact, f32 activations)"
                                : "llama.cpp agreement (Quantized, 8-bit activations)");
}

TEST(GoldenLlamaCpp, Top1AndLogitsOnSmolLM2) {
  SKIP_WITHOUT_SMOLLM2(path);
  test::expect_agreement(agreement(*LlamaModel::load(path), MatmulMode::Exact, 0.2f),
                         {.min_cases = 20, .min_top1 = 20, .max_median = 0.5f, .max_worst = 1.5f});
}

// Quantized mode computes what llama.cpp computes (Q4_1 weights times
// activations quantized to Q8_1, the Q8_0 output times Q8_0), yet its top-32
// logits agree with llama.cpp no more tightly than the Exact mode's: with
// 8-bit activations the forward pass is chaotic at this scale. A value that
// moves by one ulp can flip one activation's rounding, and one flipped step
// in the output layer's input alone moves logits by ~0.01; over 30 layers the
// flips compound. Measured on kvbench itself: scaling one RMS-norm factor by
// (1 + 2^-23) moves "The capital of France is" logits by up to 0.26 and the
// two-window perplexity below by 0.016; changing only the order in which the
// dot kernels sum their lanes moved the figures below from (23 of 24, median
// 0.339, max 0.818) to (22 of 24, 0.361, 1.016), and the one FMA chain per
// output of today's kernels gives (23 of 24, 0.362, 0.742). llama.cpp's own float
// kernels (exp, RMS norm, RoPE) differ from ours by such ulps, so the logit
// gap stays at the size of the quantization noise itself (Exact: 23 of 24,
// median 0.312, max 1.346). Top-1 must agree where llama.cpp leads by more
// than 0.5 (flips were seen at margins 0.026 and 0.23). What does show that
// Quantized computes llama.cpp's arithmetic is a statistic over many tokens:
// the perplexity test below.
TEST(GoldenLlamaCpp, QuantizedModeTop1AndLogitsOnSmolLM2) {
  SKIP_WITHOUT_SMOLLM2(path);
  const test::TopAgreement a = agreement(*LlamaModel::load(path), MatmulMode::Quantized, 0.5f);
  test::expect_agreement(a, {.min_top1 = 21, .max_median = 0.5f, .max_worst = 1.5f});
  RecordProperty("median_max_abs_diff", std::to_string(a.median));
}

// llama.cpp's 32-token greedy continuation of the chat prompt "What is the
// capital of France?" ("L'Étoile, la Marseillaise, la femme, ..." — its first
// step has a top-2 margin of 0.057), replayed step by step: kvbench is fed
// llama.cpp's ids (teacher forcing), so one flip at a narrow margin does not
// send the rest of the comparison down another continuation, and at every
// step where llama.cpp leads by 0.5 or more (the top-1 rule above) kvbench's
// top-1 must be llama.cpp's id. Measured: 31 of 32 steps identical, the
// other at llama.cpp's margin 0.229 (step 19). Free-running, the ids
// diverge at the first flip: under the earlier lane order of the dot kernels
// all 32 came out identical, under today's one FMA chain per output (closer
// to the exact sum: RMS error 0.78x on random Q4_1 x Q8_1 rows) the first 19,
// the flip at that 0.229 margin — within the noise described above.
TEST(GoldenLlamaCpp, QuantizedModeGreedyContinuationMatchesLlamaCpp) {
  SKIP_WITHOUT_SMOLLM2(path);
  auto model = LlamaModel::load(path);
  const auto golden = test::golden_json("golden_logits_smollm2.json")["greedy"];
  // The greedy record stores its lists as JSON strings.
  const auto as_list = [](const nlohmann::json& j) {
    return j.is_string() ? nlohmann::json::parse(j.get<std::string>()) : j;
  };
  const auto prompt = as_list(golden["prompt_ids"]).get<std::vector<int32_t>>();
  const auto expect = as_list(golden["ids"]).get<std::vector<int32_t>>();
  const auto margins = as_list(golden["top1_top2_margins"]).get<std::vector<float>>();
  ASSERT_EQ(expect.size(), margins.size());
  const int nv = model->config().n_vocab;
  Evaluator eval(*model, 2, MatmulMode::Quantized);
  FullCache cache(model->kv_shape());
  std::vector<float> logits(nv);
  std::vector<int32_t> pos(prompt.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
  eval.step(prompt, pos, 0, StepPhase::Prefill, cache, Logits::Last, logits.data());
  size_t same = 0, required = 0, required_same = 0;
  for (size_t i = 0; i < expect.size(); ++i) {
    const int32_t ours =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    same += ours == expect[i];
    if (margins[i] >= 0.5f) {
      ++required;
      required_same += ours == expect[i];
      EXPECT_EQ(ours, expect[i]) << "step " << i << ", llama.cpp's margin " << margins[i];
    }
    const int32_t p = static_cast<int32_t>(prompt.size() + i);
    eval.step(std::span(&expect[i], 1), std::span(&p, 1), 0, StepPhase::Decode, cache, Logits::Last,
              logits.data());
  }
  std::printf(
      "greedy continuation, teacher-forced: %zu of %zu steps identical to llama.cpp's top-1; "
      "%zu of the %zu with margin >= 0.5\n",
      same, expect.size(), required_same, required);
  RecordProperty("greedy_ids_identical", static_cast<int>(same));
  EXPECT_GT(required, 20u);
}

// Perplexity over two 512-token windows of gnu-standards prose (as
// tests/test_perplexity.cpp) against llama.cpp's runs on the same text:
// Quantized mode lands on llama.cpp's Q4_1 run (8-bit activations), Exact
// mode on llama.cpp's run with the weights dequantized to F32. Measured
// (running ppl after 2 windows): Quantized 21.6879 vs llama.cpp Q4_1 21.6967
// (0.009; 21.6825 and 21.6958 under earlier summation orders of the dot
// kernels; perturbations of one ulp or of the lane order move ours by up to
// 0.016); Exact 21.5794 = llama.cpp F32 21.5794, 0.117 away from Q4_1.
TEST(GoldenLlamaCpp, QuantizedModePerplexityMatchesLlamaCppQ4_1) {
  SKIP_WITHOUT_SMOLLM2(path);
  const test::GoldenProse p = test::golden_prose(path, "golden_perplexity_smollm2.json", false);
  const auto& golden = p.golden;
  ASSERT_EQ(p.tokens, golden["token_ids"].get<std::vector<int32_t>>());
  // runs[1]: llama.cpp on the Q4_1 weights, f32 KV; runs[2]: weights in F32.
  const auto q4_1 = golden["runs"][1]["running_ppl_after_each_chunk"].get<std::vector<double>>();
  const auto f32 = golden["runs"][2]["running_ppl_after_each_chunk"].get<std::vector<double>>();
  ASSERT_EQ(golden["runs"][1]["kv_type"].get<std::string>(), "f32");
  const PerplexityResult r = test::two_window_perplexity(*p.model, MatmulMode::Quantized, p.tokens);
  ASSERT_EQ(r.running_ppl.size(), 2u);
  std::printf(
      "running ppl after 2 windows: kvbench Quantized %.4f, llama.cpp Q4_1 %.4f, llama.cpp F32 "
      "weights %.4f\n",
      r.running_ppl[1], q4_1[1], f32[1]);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(r.running_ppl[i], q4_1[i], 0.06) << "window " << i;
    EXPECT_LT(std::fabs(r.running_ppl[i] - q4_1[i]), std::fabs(r.running_ppl[i] - f32[i]))
        << "window " << i;
  }
}

}  // namespace
}  // namespace kvbench
