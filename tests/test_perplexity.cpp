// Perplexity on real English prose from a Debian package (gnu-standards),
// against llama.cpp's llama-perplexity on the same text and model: the token
// ids of the whole text, and the running perplexity after the first two
// 512-token windows (scored over the second half of each window, as
// llama-perplexity does). llama.cpp's figures are in
// tests/data/golden_perplexity_smollm2.json.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "datasets/text_source.h"
#include "harness/perplexity.h"
#include "model/llama_model.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

constexpr const char* kText = "/usr/share/doc/gnu-standards/standards.text.gz";

TEST(Perplexity, MatchesLlamaCppOnGnuStandardsProse) {
  const std::string path = test::smollm2_path();
  if (path.empty())
    GTEST_SKIP() << "SmolLM2 not found: run scripts/setup.sh (or set KVBENCH_MODEL)";
  std::ifstream in(std::string(KVBENCH_TEST_DATA) + "/golden_perplexity_smollm2.json");
  const auto golden = nlohmann::json::parse(in);
  auto model = LlamaModel::load(path);

  // llama-perplexity reads the file with its final newline removed.
  std::string text = read_text_lines(kText, 2984, 3384);
  ASSERT_EQ(text.back(), '\n');
  text.pop_back();
  const auto tokens = model->tokenizer().encode(text, false, false);
  ASSERT_EQ(tokens, golden["token_ids"].get<std::vector<int32_t>>());
  ASSERT_GE(tokens.size(), 4000u);

  // llama.cpp's run on the same weights dequantized to F32 (f32 activations
  // like kvbench): the third entry of "runs".
  const auto& f32_run = golden["runs"][2];
  ASSERT_EQ(f32_run["ctx"].get<int>(), 512);
  const auto expected = f32_run["running_ppl_after_each_chunk"].get<std::vector<double>>();

  Evaluator eval(*model, 2, MatmulMode::Exact);
  PerplexityOptions o;
  o.ctx = 512;
  o.skip = 256;
  const std::vector<int32_t> two_windows(tokens.begin(), tokens.begin() + 2 * 512);
  const PerplexityResult r = perplexity(eval, two_windows, o);
  ASSERT_EQ(r.running_ppl.size(), 2u);
  std::printf("running ppl after 2 windows: kvbench %.4f, llama.cpp (f32 weights) %.4f\n",
              r.running_ppl[1], expected[1]);
  EXPECT_NEAR(r.running_ppl[0], expected[0], 2e-3);
  EXPECT_NEAR(r.running_ppl[1], expected[1], 2e-3);
  EXPECT_EQ(r.scored, 2 * 255);
}

}  // namespace
}  // namespace kvbench
