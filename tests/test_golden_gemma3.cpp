// Agreement with llama.cpp (the oracle) on Gemma 3 270M Q4_K_M: token ids of
// the golden strings, next-token top-1 and top-32 logits on the golden
// prompts, and perplexity on gnu-standards prose. The figures were produced
// by llama.cpp outside this repository (tests/data/golden_*_gemma3.json name
// the build and the commands); only the numbers are committed. Every test
// skips, saying so, when models/ lacks the file (scripts/setup.sh fetches it).
//
// kvbench's exact mode keeps activations in f32, so it is compared with
// llama.cpp running the same weights dequantized to F32; the quantized mode
// (8-bit activations) with llama.cpp on the file as shipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "datasets/text_source.h"
#include "harness/perplexity.h"
#include "model/evaluator.h"
#include "model/llama_model.h"
#include "policies/full_cache.h"
#include "tests/support/reference_gemma3.h"

namespace kvbench {
namespace {

#define SKIP_WITHOUT_GEMMA3(path)                                                        \
  const std::string path = test::gemma3_path();                                          \
  if (path.empty())                                                                      \
  GTEST_SKIP() << "models/gemma-3-270m-q4_k_m.gguf not found: run scripts/setup.sh (or " \
                  "scripts/fetch_model.sh gemma3)"

nlohmann::json golden(const std::string& name) {
  std::ifstream in(std::string(KVBENCH_TEST_DATA) + "/" + name);
  return nlohmann::json::parse(in);
}

TEST(GoldenGemma3, TokenIdsMatchLlamaCpp) {
  SKIP_WITHOUT_GEMMA3(path);
  auto file = GgufFile::open(path);
  auto tok = Tokenizer::from_gguf(*file);
  const auto g = golden("golden_tokens_gemma3.json");
  ASSERT_EQ(tok->fingerprint(), g["vocab_fingerprint"].get<std::string>()) << "a different file";
  EXPECT_EQ(tok->model_name(), "llama");
  ASSERT_GE(g["cases"].size(), 25u);
  int same = 0;
  for (const auto& c : g["cases"]) {
    const auto text = c["text"].get<std::string>();
    const auto a = tok->encode(text, true, true), b = tok->encode(text, true, false);
    EXPECT_EQ(a, c["parse_special"].get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(b, c["no_parse_special"].get<std::vector<int32_t>>()) << text;
    same += a == c["parse_special"].get<std::vector<int32_t>>() &&
            b == c["no_parse_special"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok->decode(b), text);
  }
  std::printf("gemma3 token ids identical to llama.cpp's on %d of %zu strings\n", same,
              g["cases"].size());
  EXPECT_EQ(tok->bos(), 2);
  EXPECT_TRUE(tok->is_end_of_generation(1));    // <eos>
  EXPECT_TRUE(tok->is_end_of_generation(106));  // <end_of_turn>
}

struct Agreement {
  int cases = 0, top1_same = 0;
  float median = 0.0f, worst = 0.0f;  // over prompts: max |logit diff| over llama.cpp's top 32
};

// Every golden prompt as one prefill step; the last token's logits against
// llama.cpp's list `key`. Top-1 must agree where llama.cpp leads by more than
// `margin`.
Agreement agreement(const LlamaModel& model, MatmulMode mode, const char* key, float margin) {
  const auto g = golden("golden_logits_gemma3.json");
  const int nv = model.config().n_vocab;
  Evaluator eval(model, 2, mode);
  std::vector<float> logits(nv);
  Agreement a;
  std::vector<float> diffs;
  for (const auto& c : g["cases"]) {
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
      "gemma3 vs llama.cpp (%s): top-1 identical on %d of %d prompts; max |logit diff| "
      "over each prompt's top 32: median %.4f, max %.4f\n",
      key, a.top1_same, a.cases, a.median, a.worst);
  return a;
}

// Measured: top-1 identical on 24 of 24 (two of llama.cpp's leads are below
// 0.05: 0.028 and 0.033), max |logit diff| over each prompt's top 32: median
// 0.0035, max 0.0127.
TEST(GoldenGemma3, ExactModeTop1AndLogitsMatchLlamaCppOnF32Weights) {
  SKIP_WITHOUT_GEMMA3(path);
  auto model = LlamaModel::load(path);
  const Agreement a = agreement(*model, MatmulMode::Exact, "top_f32_weights", 0.05f);
  RecordProperty("top1_identical", a.top1_same);
  EXPECT_EQ(a.cases, 24);
  EXPECT_GE(a.top1_same, 22);
  EXPECT_LT(a.worst, 0.05f);
}

// With 8-bit activations the logits sit as far from llama.cpp's as SmolLM2's
// do (see test_golden_llamacpp.cpp: a one-ulp change moves them by tenths):
// measured median 0.506, max 1.712 over each prompt's top 32, top-1 24 of 24
// (under the earlier lane order of the dot kernels 0.554 and 1.244; the
// order alone moves the worst prompt by half a logit).
TEST(GoldenGemma3, QuantizedModeTop1MatchesLlamaCppOnTheShippedFile) {
  SKIP_WITHOUT_GEMMA3(path);
  auto model = LlamaModel::load(path);
  const Agreement a = agreement(*model, MatmulMode::Quantized, "top", 0.5f);
  RecordProperty("top1_identical", a.top1_same);
  EXPECT_GE(a.top1_same, 21);
  EXPECT_LT(a.median, 0.7f);
  EXPECT_LT(a.worst, 2.0f);
}

// Two 512-token windows of gnu-standards prose (as test_perplexity.cpp does
// for SmolLM2), each starting with BOS as llama-perplexity does for a
// vocabulary that asks for it. Measured running ppl: 24.4675 and 17.9777
// (llama.cpp on the F32 weights: 24.4660, 17.9777). Over the whole text (8
// windows, `kvbench perplexity --ctx 512 --skip 256`): 16.8688, llama.cpp
// 16.8686 on the F32 weights, 16.8963 on the shipped Q4_K_M with 8-bit
// activations.
TEST(GoldenGemma3, PerplexityMatchesLlamaCppOnF32Weights) {
  SKIP_WITHOUT_GEMMA3(path);
  const auto g = golden("golden_perplexity_gemma3.json");
  auto model = LlamaModel::load(path);
  std::string text = read_text_lines("/usr/share/doc/gnu-standards/standards.text.gz", 2984, 3384);
  text.pop_back();  // llama-perplexity drops the final newline
  const auto tokens = model->tokenizer().encode(text, true, false);
  ASSERT_EQ(tokens, g["token_ids"].get<std::vector<int32_t>>());
  const auto& f32 = g["runs"][1];
  ASSERT_EQ(f32["weights"].get<std::string>().rfind("F32", 0), 0u);
  const auto expected = f32["running_ppl_after_each_chunk"].get<std::vector<double>>();
  Evaluator eval(*model, 2, MatmulMode::Exact);
  PerplexityOptions o;
  o.ctx = 512;
  o.skip = 256;
  o.bos_per_window = true;
  const PerplexityResult r =
      perplexity(eval, std::vector<int32_t>(tokens.begin(), tokens.begin() + 1024), o);
  ASSERT_EQ(r.running_ppl.size(), 2u);
  std::printf("gemma3 running ppl after 2 windows: kvbench %.4f, llama.cpp (F32 weights) %.4f\n",
              r.running_ppl[1], expected[1]);
  EXPECT_NEAR(r.running_ppl[0], expected[0], 3e-3);
  EXPECT_NEAR(r.running_ppl[1], expected[1], 1e-3);
  EXPECT_EQ(r.scored, 2 * 255);
}

}  // namespace
}  // namespace kvbench
