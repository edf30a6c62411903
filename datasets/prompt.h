// An instance laid out as model tokens through the model's chat template:
// one user turn (preamble, context, question; or preamble, question,
// context), the assistant turn opened and started with the answer prefix.
// Token spans are exact because the context and the question are encoded as
// separate pieces between template text that ends at a newline; the needles'
// spans are the context tokens whose bytes overlap the needle's bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "datasets/instance.h"
#include "model/llama_model.h"

namespace kvbench {

struct Prompt {
  std::vector<int32_t> tokens;      // BOS (when the vocabulary wants one) .. answer prefix
  Span context_tokens;              // absolute in `tokens`
  Span question_tokens;             // absolute; empty for ppl
  std::vector<Span> needle_tokens;  // [instance.needles.size()] absolute
};

// question_first: the question before the context (the default, after it, is
// the query-aware order). A "perplexity" instance (task ppl) is BOS + the
// context, with no template. Throws InputError naming the instance when the
// prompt plus its max_new_tokens does not fit the model's context.
Prompt build_prompt(const LlamaModel& model, const Instance& instance, bool question_first = false);

}  // namespace kvbench
