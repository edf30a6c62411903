#include "tests/support/golden.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "datasets/text_source.h"
#include "model/evaluator.h"
#include "policies/full_cache.h"

namespace kvbench::test {

nlohmann::json golden_json(const std::string& name) {
  std::ifstream in(std::string(KVBENCH_TEST_DATA) + "/" + name);
  return nlohmann::json::parse(in);
}

TopAgreement top_agreement(const LlamaModel& model, MatmulMode mode, const nlohmann::json& golden,
                           const char* key, float margin, const std::string& label) {
  const int nv = model.config().n_vocab;
  Evaluator eval(model, 2, mode);
  std::vector<float> logits(nv);
  TopAgreement a;
  std::vector<float> diffs;
  for (const auto& c : golden["cases"]) {
    const auto prompt = c["prompt"].get<std::string>();
    const auto ids = model.tokenizer().encode(prompt, true, true);
    EXPECT_EQ(ids, c["ids"].get<std::vector<int32_t>>()) << prompt;
    FullCache cache(model.kv_shape());
    std::vector<int32_t> pos(ids.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
    eval.step(ids, pos, 0, StepPhase::Prefill, cache, Logits::Last, logits.data());
    const auto& top = c[key];
    const int32_t ours =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    const int32_t theirs = top[0][0].get<int32_t>();
    const float lead = top[0][1].get<float>() - top[1][1].get<float>();
    ++a.cases;
    a.top1_same += ours == theirs;
    if (lead > margin) EXPECT_EQ(ours, theirs) << prompt << " (llama.cpp's lead " << lead << ")";
    float worst = 0.0f;
    for (const auto& e : top)
      worst = std::max(worst, std::fabs(logits[e[0].get<int32_t>()] - e[1].get<float>()));
    if (std::getenv("KVBENCH_GOLDEN_VERBOSE"))
      std::printf("%4zu tokens  max|diff| %.4f  top1 %d/%d  lead %.3f  %.40s\n", ids.size(), worst,
                  ours, theirs, lead, prompt.c_str());
    diffs.push_back(worst);
  }
  std::sort(diffs.begin(), diffs.end());
  a.median = diffs[diffs.size() / 2];
  a.worst = diffs.back();
  std::printf(
      "%s: top-1 identical on %d of %d prompts; max |logit diff| over each prompt's top 32: "
      "median %.4f, max %.4f\n",
      label.c_str(), a.top1_same, a.cases, a.median, a.worst);
  return a;
}

void expect_agreement(const TopAgreement& a, const AgreementBounds& b) {
  ::testing::Test::RecordProperty("top1_identical", a.top1_same);
  if (b.cases) EXPECT_EQ(a.cases, *b.cases);
  if (b.min_cases) EXPECT_GE(a.cases, *b.min_cases);
  EXPECT_GE(a.top1_same, b.min_top1);
  if (b.max_median) EXPECT_LT(a.median, *b.max_median);
  EXPECT_LT(a.worst, b.max_worst);
}

std::string perplexity_prose() {
  std::string text = read_text_lines("/usr/share/doc/gnu-standards/standards.text.gz", 2984, 3384);
  EXPECT_EQ(text.empty() ? '\0' : text.back(), '\n');
  if (!text.empty()) text.pop_back();  // llama-perplexity drops the final newline
  return text;
}

PerplexityResult two_window_perplexity(const LlamaModel& model, MatmulMode mode,
                                       const std::vector<int32_t>& tokens, bool bos_per_window) {
  Evaluator eval(model, 2, mode);
  PerplexityOptions o;
  o.ctx = 512;
  o.skip = 256;
  o.bos_per_window = bos_per_window;
  const size_t n = std::min<size_t>(tokens.size(), 2 * 512);
  return perplexity(eval, std::vector<int32_t>(tokens.begin(), tokens.begin() + n), o);
}

GoldenProse golden_prose(const std::string& path, const std::string& name, bool bos) {
  GoldenProse p;
  p.golden = golden_json(name);
  p.model = LlamaModel::load(path);
  p.tokens = p.model->tokenizer().encode(perplexity_prose(), bos, false);
  return p;
}

void expect_exact_two_window_perplexity(const GoldenProse& p, bool bos_per_window,
                                        const std::vector<double>& expected,
                                        const double (&tolerance)[2], const char* label,
                                        const char* theirs) {
  const PerplexityResult r =
      two_window_perplexity(*p.model, MatmulMode::Exact, p.tokens, bos_per_window);
  ASSERT_EQ(r.running_ppl.size(), 2u);
  std::printf("%s after 2 windows: kvbench %.4f, %s %.4f\n", label, r.running_ppl[1], theirs,
              expected[1]);
  EXPECT_NEAR(r.running_ppl[0], expected[0], tolerance[0]);
  EXPECT_NEAR(r.running_ppl[1], expected[1], tolerance[1]);
  EXPECT_EQ(r.scored, 2 * 255);
}

}  // namespace kvbench::test
