// An instance laid out as model tokens through the model's chat template:
// one user turn (preamble, context, question; or preamble, question,
// context), the assistant turn opened and started with the answer prefix.
// The ids are the tokenization of the rendered prompt text, as llama.cpp or
// Hugging Face would feed it; only the template's own text may spell control
// tokens. The spans are the tokens whose bytes overlap the context, the
// question and each needle (a whitespace token shared by the context and the
// question goes to the one that comes first).
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
// context, with no template. cut_after_context: the text up to the context's
// end and the rest are tokenized as two texts, so the first part's tokens do
// not depend on the question (what a document snapshot caches; see
// harness/snapshot/document_qa.h); needs the question after the context.
// Throws InputError naming the instance when the prompt plus its
// max_new_tokens does not fit the model's context.
Prompt build_prompt(const LlamaModel& model, const Instance& instance, bool question_first = false,
                    bool cut_after_context = false);

// The chat template around one user turn, rendered as build_prompt renders
// it: `head` is BOS (when the vocabulary wants one) and the template's text
// before the user's message, the ids every templated prompt starts with;
// `suffix` its text after the message (the assistant turn opened), encoded
// alone. kvpress's KVzipPress calls them prefix_length and suffix_ids.
struct TemplateIds {
  std::vector<int32_t> head, suffix;
};
TemplateIds chat_template_ids(const LlamaModel& model);

}  // namespace kvbench
