// The golden tests' side of llama.cpp (the oracle): the committed figures in
// tests/data/golden_*.json, the prose the perplexity figures were measured
// on, and the comparisons test_golden_llamacpp, test_golden_gemma3 and
// test_perplexity make with them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/perplexity.h"
#include "model/llama_model.h"
#include "model/ops/matmul.h"
#include "tests/support/reference_gemma3.h"
#include "tests/support/reference_llama.h"

// In a test: `path` = the real model's file, or the test skips saying how to
// fetch it.
#define SKIP_WITHOUT_SMOLLM2(path)                                   \
  const std::string path = test::smollm2_path();                     \
  if (path.empty())                                                  \
  GTEST_SKIP() << "SmolLM2 not found: run scripts/setup.sh (or set " \
                  "KVBENCH_MODEL)"
#define SKIP_WITHOUT_GEMMA3(path)                                                        \
  const std::string path = test::gemma3_path();                                          \
  if (path.empty())                                                                      \
  GTEST_SKIP() << "models/gemma-3-270m-q4_k_m.gguf not found: run scripts/setup.sh (or " \
                  "scripts/fetch_model.sh gemma3)"

namespace kvbench::test {

// tests/data/<name>, parsed.
nlohmann::json golden_json(const std::string& name);

struct TopAgreement {
  int cases = 0, top1_same = 0;
  float median = 0.0f, worst = 0.0f;  // over prompts: max |logit diff| over llama.cpp's top 32
};

// Every case of a golden logits file (its "cases": prompt, ids and llama.cpp's
// top 32 under `key`) as one prefill step; the last token's logits against
// llama.cpp's. The prompt must tokenize to llama.cpp's ids, and top-1 must
// agree where llama.cpp leads by more than `margin`. `label` names the
// comparison in the printed summary.
TopAgreement top_agreement(const LlamaModel& model, MatmulMode mode, const nlohmann::json& golden,
                           const char* key, float margin, const std::string& label);

// What a golden test asks of a TopAgreement, each bound checked where set:
// cases == `cases`, cases >= min_cases, top1_same >= min_top1, median <
// max_median, worst < max_worst.
struct AgreementBounds {
  std::optional<int> cases, min_cases;
  int min_top1 = 0;
  std::optional<float> max_median;
  float max_worst = 0.0f;
};

// Checks `a` against `b` and records a.top1_same as the test's property
// "top1_identical".
void expect_agreement(const TopAgreement& a, const AgreementBounds& b);

// The gnu-standards prose the perplexity figures were measured on, as
// llama-perplexity reads it (without the final newline).
std::string perplexity_prose();

// Perplexity over the first two 512-token windows of `tokens`, each scored
// over its second half as llama-perplexity does.
PerplexityResult two_window_perplexity(const LlamaModel& model, MatmulMode mode,
                                       const std::vector<int32_t>& tokens,
                                       bool bos_per_window = false);

// The model at `path` (loaded here), the golden perplexity file `name` and
// the prose as that model tokenizes it (BOS first when `bos`); the test
// checks the tokens against the file's "token_ids".
struct GoldenProse {
  nlohmann::json golden;
  std::unique_ptr<LlamaModel> model;
  std::vector<int32_t> tokens;
};
GoldenProse golden_prose(const std::string& path, const std::string& name, bool bos);

// two_window_perplexity of the prose in Exact mode against llama.cpp's
// running perplexity `expected` after each window (within tolerance[0],
// tolerance[1]), 2 x 255 predictions scored. Prints "<label> after 2
// windows: kvbench X, <theirs> Y".
void expect_exact_two_window_perplexity(const GoldenProse& p, bool bos_per_window,
                                        const std::vector<double>& expected,
                                        const double (&tolerance)[2], const char* label,
                                        const char* theirs);

}  // namespace kvbench::test
