// The reconstruction pass, run by the harness for a policy whose scorer
// needs it (PolicyCache::needs_reconstruction; what the pass is:
// policies/reconstruction.h). The harness owns what the policy cannot: the
// model that runs the pass, the tokenizer that encodes the repeat prompts,
// and the chat template whose head and suffix frame them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/evaluator.h"
#include "policies/policy_cache.h"

namespace kvbench {

// `prompt` is in sequence `seq` of `cache` at positions [0, n) and nothing
// else is: each pass runs on a sequence of its own sharing it (steps of
// `step_chunk` tokens, eviction paused), the cache rolls back to its
// checkpoint after each, and the recorded tables go to set_importance. The
// template head counts only when the prompt starts with it (a perplexity
// text has none: then, as kvpress without a chat template, no head and the
// suffix "\n"). InputError when the cache holds anything else.
void run_reconstruction(Evaluator& eval, PolicyCache& cache, std::span<const int32_t> prompt,
                        int step_chunk, int seq = 0);

// The pass's tables alone ([layer * kv_heads][stream index]), for a caller
// that keeps them: what run_reconstruction gives set_importance.
using ReconstructionTables = std::vector<std::vector<float>>;
ReconstructionTables reconstruction_tables(Evaluator& eval, PolicyCache& cache,
                                           std::span<const int32_t> prompt, int step_chunk,
                                           int seq = 0);
void set_reconstruction(PolicyCache& cache, const ReconstructionTables& tables);

// The end of a prompt for any policy: the reconstruction pass when the
// policy needs it, then end_prefill().
void finish_prompt(Evaluator& eval, PolicyCache& cache, std::span<const int32_t> prompt,
                   int step_chunk, int seq = 0);

}  // namespace kvbench
