// Retention measurements of one cell against the full cache.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/instance.h"
#include "datasets/prompt.h"
#include "model/evaluator.h"
#include "model/tokenizer/tokenizer.h"
#include "policies/policy_cache.h"

namespace kvbench {

// The gold answer as tokens continuing the prompt (after its answer prefix):
// answers[0], or all answers joined by ", " for multi-value graders.
std::vector<int32_t> gold_answer_tokens(const Instance& instance, const Tokenizer& tok);

// Teacher forcing: the distributions at each answer position given the gold
// answer so far. Position 0 uses the prompt's last logits; each later one
// feeds one answer token as a decode step (as generation would), so bounded
// policies maintain themselves exactly as while generating.
struct Forced {
  std::vector<float> log_probs;  // [n_answer][n_vocab] log-softmax
  std::vector<int32_t> top1;     // [n_answer]
  double nll = 0.0;              // mean -log p(answer token)
};
// The answer's stream positions continue from first_position (the cache maps
// them: KvCache::position_for).
Forced teacher_force(Evaluator& eval, KvCache& cache, const std::vector<float>& last_logits,
                     const std::vector<int32_t>& answer, int32_t first_position);

// KL(full || policy) averaged over answer positions, and top-1 agreement.
double mean_kl(const Forced& full, const Forced& policy, int n_vocab);
double top1_agreement(const Forced& full, const Forced& policy);

// Fraction of the needle tokens' K/V held (hot or cold), per layer and KV
// head, and overall; under "attended" the same for the hot set attention
// reads at question time (restored pages included, the cold tier not).
// Null when the prompt has no needle.
nlohmann::json needle_survival(const PolicyCache& cache, const Prompt& prompt);

// The cache's memory at question time: K/V bytes (codes and scales) hot and
// cold, metadata, policy state.
nlohmann::json memory_json(const PolicyCache& cache);
uint64_t kv_bytes_hot(const PolicyCache& cache);

}  // namespace kvbench
