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

#include <nlohmann/json.hpp>

#include "harness/perplexity.h"
#include "model/llama_model.h"
#include "tests/support/golden.h"

namespace kvbench {
namespace {

TEST(GoldenGemma3, TokenIdsMatchLlamaCpp) {
  SKIP_WITHOUT_GEMMA3(path);
  auto file = GgufFile::open(path);
  auto tok = Tokenizer::from_gguf(*file);
  const auto g = test::golden_json("golden_tokens_gemma3.json");
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

// Every golden prompt's last-token logits against llama.cpp's list `key`;
// top-1 must agree where llama.cpp leads by more than `margin`.
test::TopAgreement agreement(const LlamaModel& model, MatmulMode mode, const char* key,
                             float margin) {
  return test::top_agreement(model, mode, test::golden_json("golden_logits_gemma3.json"), key,
                             margin, std::string("gemma3 vs llama.cpp (") + key + ")");
}

// Measured: top-1 identical on 24 of 24 (two of llama.cpp's leads are below
// 0.05: 0.028 and 0.033), max |logit diff| over each prompt's top 32: median
// 0.0035, max 0.0127.
TEST(GoldenGemma3, ExactModeTop1AndLogitsMatchLlamaCppOnF32Weights) {
  SKIP_WITHOUT_GEMMA3(path);
  test::expect_agreement(
      agreement(*LlamaModel::load(path), MatmulMode::Exact, "top_f32_weights", 0.05f),
      {.cases = 24, .min_top1 = 22, .max_worst = 0.05f});
}

// With 8-bit activations the logits sit as far from llama.cpp's as SmolLM2's
// do (see test_golden_llamacpp.cpp: a one-ulp change moves them by tenths):
// measured median 0.506, max 1.712 over each prompt's top 32, top-1 24 of 24
// (under the earlier lane order of the dot kernels 0.554 and 1.244; the
// order alone moves the worst prompt by half a logit).
TEST(GoldenGemma3, QuantizedModeTop1MatchesLlamaCppOnTheShippedFile) {
  SKIP_WITHOUT_GEMMA3(path);
  test::expect_agreement(agreement(*LlamaModel::load(path), MatmulMode::Quantized, "top", 0.5f),
                         {.min_top1 = 21, .max_median = 0.7f, .max_worst = 2.0f});
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
  const test::GoldenProse p = test::golden_prose(path, "golden_perplexity_gemma3.json", true);
  ASSERT_EQ(p.tokens, p.golden["token_ids"].get<std::vector<int32_t>>());
  const auto& f32 = p.golden["runs"][1];
  ASSERT_EQ(f32["weights"].get<std::string>().rfind("F32", 0), 0u);
  test::expect_exact_two_window_perplexity(
      p, /*bos_per_window=*/true, f32["running_ppl_after_each_chunk"].get<std::vector<double>>(),
      {3e-3, 1e-3}, "gemma3 running ppl", "llama.cpp (F32 weights)");
}

}  // namespace
}  // namespace kvbench
