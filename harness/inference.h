// Shared piece of the model-running subcommands: turning a prompt into
// tokens (optionally through the chat template). The loops over the model
// are model/steps.h.
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

}  // namespace kvbench
