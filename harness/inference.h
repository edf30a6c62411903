// Shared pieces of the model-running code: turning a prompt into tokens
// (optionally through the chat template), a model's cache context. The
// loops over the model are model/steps.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/evaluator.h"
#include "model/llama_model.h"
#include "model/ops/kv_cache.h"
#include "policies/policy_cache.h"

namespace kvbench {

// With chat: the file's chat template around one user message (plus the
// template's default system message), assistant turn opened. Special-token
// spellings in the rendered template become special tokens; in a plain
// prompt they are parsed too (as llama.cpp does).
std::vector<int32_t> prompt_tokens(const LlamaModel& model, const std::string& prompt, bool chat);

// A cache context for `model`: its KV shape and RoPE, the context a ratio
// budget refers to, and the random scorer's default seed.
CacheContext cache_context(const LlamaModel& model, int64_t context_tokens, uint64_t seed = 0);

}  // namespace kvbench
