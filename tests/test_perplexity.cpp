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
  const test::GoldenProse p = test::golden_prose(path, "golden_perplexity_smollm2.json", false);
  ASSERT_EQ(p.tokens, p.golden["token_ids"].get<std::vector<int32_t>>());
  ASSERT_GE(p.tokens.size(), 4000u);

  // llama.cpp's run on the same weights dequantized to F32 (f32 activations
  // like kvbench): the third entry of "runs".
  const auto& f32_run = p.golden["runs"][2];
  ASSERT_EQ(f32_run["ctx"].get<int>(), 512);
  test::expect_exact_two_window_perplexity(
      p, /*bos_per_window=*/false,
      f32_run["running_ppl_after_each_chunk"].get<std::vector<double>>(), {2e-3, 2e-3},
      "running ppl", "llama.cpp (f32 weights)");
}

}  // namespace
}  // namespace kvbench
