// Perplexity on real English prose from a Debian package (gnu-standards),
// against llama.cpp's llama-perplexity on the same text and model: the token
// ids of the whole text, and the running perplexity after the first two
// 512-token windows (scored over the second half of each window, as
// llama-perplexity does). llama.cpp's figures are in
// tests/data/golden_perplexity_smollm2.json.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/perplexity.h"
#include "model/llama_model.h"
#include "tests/support/golden.h"

namespace kvbench {
namespace {

TEST(Perplexity, MatchesLlamaCppOnGnuStandardsProse) {
  SKIP_WITHOUT_SMOLLM2(path);
  const auto golden = test::golden_json("golden_perplexity_smollm2.json");
  auto model = LlamaModel::load(path);
  const auto tokens = model->tokenizer().encode(test::perplexity_prose(), false, false);
  ASSERT_EQ(tokens, golden["token_ids"].get<std::vector<int32_t>>());
  ASSERT_GE(tokens.size(), 4000u);

  // llama.cpp's run on the same weights dequantized to F32 (f32 activations
  // like kvbench): the third entry of "runs".
  const auto& f32_run = golden["runs"][2];
  ASSERT_EQ(f32_run["ctx"].get<int>(), 512);
  const auto expected = f32_run["running_ppl_after_each_chunk"].get<std::vector<double>>();

  const PerplexityResult r = test::two_window_perplexity(*model, MatmulMode::Exact, tokens);
  ASSERT_EQ(r.running_ppl.size(), 2u);
  std::printf("running ppl after 2 windows: kvbench %.4f, llama.cpp (f32 weights) %.4f\n",
              r.running_ppl[1], expected[1]);
  EXPECT_NEAR(r.running_ppl[0], expected[0], 2e-3);
  EXPECT_NEAR(r.running_ppl[1], expected[1], 2e-3);
  EXPECT_EQ(r.scored, 2 * 255);
}

}  // namespace
}  // namespace kvbench
