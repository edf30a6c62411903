// Agreement with llama.cpp (the oracle) on SmolLM2: token ids of the golden
// prompts, and next-token top-1 and top-32 logits. The figures were produced
// by llama.cpp outside this repository (tests/data/golden_logits_smollm2.json
// names the build); only the numbers are committed.
//
// llama.cpp multiplies Q4_1 weights with activations quantized to 8 bits per
// block of 32; kvbench's path keeps activations in f32 (and matches a naive
// double-precision reference to ~5e-5). Measured: emulating 8-bit activations
// in kvbench moves its logits by the same 0.2-0.7 as the gap to llama.cpp, so
// the gap is that quantization noise. Top-1 can only differ where llama.cpp's
// own top-2 margin is of that size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/evaluator.h"
#include "model/llama_model.h"
#include "policies/full_cache.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

nlohmann::json load_golden() {
  std::ifstream in(std::string(KVBENCH_TEST_DATA) + "/golden_logits_smollm2.json");
  return nlohmann::json::parse(in);
}

TEST(GoldenLlamaCpp, Top1AndLogitsOnSmolLM2) {
  const std::string path = test::smollm2_path();
  if (path.empty()) GTEST_SKIP() << "SmolLM2 not found: run scripts/setup.sh (or set KVBENCH_MODEL)";
  auto model = LlamaModel::load(path);
  const auto golden = load_golden();
  const int nv = model->config().n_vocab;
  Evaluator eval(*model, 2);
  std::vector<float> logits(nv);
  int cases = 0, top1_same = 0;
  float worst_top32 = 0.0f;
  std::vector<float> case_diffs;
  for (const auto& c : golden["cases"]) {
    const auto prompt = c["prompt"].get<std::string>();
    const auto ids = model->tokenizer().encode(prompt, true, true);
    ASSERT_EQ(ids, c["ids"].get<std::vector<int32_t>>()) << prompt;
    FullCache cache(model->kv_shape());
    std::vector<int32_t> pos(ids.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
    eval.step(ids, pos, 0, StepPhase::Prefill, cache, Logits::Last, logits.data());
    const auto& top = c["top"];
    const int32_t ours = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    const int32_t theirs = top[0][0].get<int32_t>();
    const float margin = top[0][1].get<float>() - top[1][1].get<float>();
    ++cases;
    top1_same += ours == theirs;
    // Where llama.cpp's top-1 leads by more than the numeric difference of
    // the two paths, the winner must be the same.
    if (margin > 0.2f) EXPECT_EQ(ours, theirs) << prompt << " (llama.cpp margin " << margin << ")";
    float case_worst = 0.0f;
    for (const auto& e : top)
      case_worst = std::max(case_worst, std::fabs(logits[e[0].get<int32_t>()] - e[1].get<float>()));
    if (std::getenv("KVBENCH_GOLDEN_VERBOSE"))
      std::printf("%4zu tokens  max|diff| %.4f  top1 %d/%d  %.40s\n", ids.size(), case_worst, ours, theirs, prompt.c_str());
    worst_top32 = std::max(worst_top32, case_worst);
    case_diffs.push_back(case_worst);
  }
  std::printf("llama.cpp agreement: top-1 identical on %d of %d prompts; max |logit diff| over "
              "each prompt's top 32 = %.4f\n", top1_same, cases, worst_top32);
  RecordProperty("top1_identical", top1_same);
  EXPECT_GE(cases, 20);
  EXPECT_GE(top1_same, 20);
  std::sort(case_diffs.begin(), case_diffs.end());
  const float median = case_diffs[case_diffs.size() / 2];
  std::printf("median over prompts of max |logit diff| = %.4f\n", median);
  EXPECT_LT(median, 0.5f);
  EXPECT_LT(worst_top32, 1.5f);
}

}  // namespace
}  // namespace kvbench
