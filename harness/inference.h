// Shared pieces of the model-running subcommands: turning a prompt into
// tokens (optionally through the chat template) and chunked prefill.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/evaluator.h"
#include "model/llama_model.h"
#include "model/ops/kv_cache.h"

namespace kvbench {

// With chat: the file's chat template around one user message (plus the
// template's default system message), assistant turn opened. Special-token
// spellings in the rendered template become special tokens; in a plain
// prompt they are parsed too (as llama.cpp does).
std::vector<int32_t> prompt_tokens(const LlamaModel& model, const std::string& prompt, bool chat);

// Feeds tokens at positions [start, start + n) in chunks of at most `chunk`;
// writes the last token's logits ([n_vocab]) when `last_logits` is non-null.
void prefill(Evaluator& eval, KvCache& cache, const std::vector<int32_t>& tokens, int32_t start,
             int chunk, float* last_logits);

}  // namespace kvbench
