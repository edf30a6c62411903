// The golden tests' side of llama.cpp (the oracle): the committed figures in
// tests/data/golden_*.json, the prose the perplexity figures were measured
// on, and the comparisons test_golden_llamacpp, test_golden_gemma3 and
// test_perplexity make with them.
#pragma once

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

// The gnu-standards prose the perplexity figures were measured on, as
// llama-perplexity reads it (without the final newline).
std::string perplexity_prose();

// Perplexity over the first two 512-token windows of `tokens`, each scored
// over its second half as llama-perplexity does.
PerplexityResult two_window_perplexity(const LlamaModel& model, MatmulMode mode,
                                       const std::vector<int32_t>& tokens,
                                       bool bos_per_window = false);

}  // namespace kvbench::test
