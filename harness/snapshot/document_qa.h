// Cache-augmented generation: a document prefilled once into sequence 0 of
// a cache (and compressed there when the policy says so), then any number of
// questions answered from it. Each question runs on its own sequence that
// shares the document's entries (seq_cp: nothing copied); after the answer
// the cache rolls back to the document's checkpoint, so every question sees
// exactly the same cache, whatever was asked before it.
//
// The prompt is laid out as datasets/prompt.h lays out an instance (one user
// turn: preamble, document, question; the assistant turn opened and started
// with the answer prefix). The cached prefix ends with the document; the
// suffix (the break, question, template tail, answer prefix) is tokenized as
// a text of its own (build_prompt's cut_after_context), because the snapshot
// exists before any question. prefix + suffix equal the tokens of the whole
// rendered prompt unless the tokenizer would merge across the document's end
// (a document ending in whitespace; with llama3-style pre-tokenizers, one
// ending in punctuation, whose token takes the following newlines).
// The same steps run whether the document was just prefilled or loaded from
// a snapshot: answers and logits are bit-identical (same threads).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/snapshot/snapshot_file.h"
#include "model/evaluator.h"
#include "model/llama_model.h"
#include "policies/policy_cache.h"

namespace kvbench {

// BOS, template head, preamble and the document: the tokens a snapshot
// caches (chunk, activations and logits are left for prefill_document).
SnapshotDocument document_prefix(const LlamaModel& model, const std::string& preamble,
                                 const std::string& document);

// What follows the document for one question.
std::vector<int32_t> question_suffix(const LlamaModel& model, const std::string& question,
                                     const std::string& answer_prefix);

// An empty cache of `policy` for the document: the model's shape and RoPE,
// the document's length as the context, `seed` for randomized policies.
std::unique_ptr<PolicyCache> document_cache(const LlamaModel& model, const PolicySpec& policy,
                                            const SnapshotDocument& doc, uint64_t seed);

// Prefills doc.tokens into sequence 0 of an empty cache in chunks of
// doc.chunk, then end_prefill() (after-prefill policies compress now).
// Fills doc.logits with the last token's next-token logits. Returns seconds.
double prefill_document(Evaluator& eval, PolicyCache& cache, SnapshotDocument& doc);

struct DocumentAnswer {
  std::string text;
  std::vector<int32_t> tokens;
  bool stopped_at_eog = false;
  std::string first_logits_sha256;  // of the logits the first answer token is chosen from
  std::vector<float> first_logits;  // [n_vocab]
  double prefill_seconds = 0;       // the suffix
  double decode_seconds = 0;
};

// How the question's tokens relate to the document's budget.
enum class QuestionBudget {
  Added,   // the document keeps its budget; the question (and the answer) are
           // added whole: nothing is evicted after the document (kvpress's setting)
  Shared,  // the policy keeps maintaining its budget: the question's tokens
           // displace document entries and end_prefill compresses again
};

// Answers one question on sequence `seq` (1..63; it must not exist),
// sharing sequence 0: suffix prefilled in chunks of doc.chunk from the
// sequence's next position, end_prefill(), greedy decoding; then
// cache.rollback(checkpoint). InputError when the document, suffix and
// max_new_tokens exceed the model's context, or the policy renumbers
// positions per sequence (streaming:pos=contiguous cannot share a prefix).
DocumentAnswer answer_from_document(Evaluator& eval, PolicyCache& cache,
                                    const PolicyCache::Checkpoint& checkpoint,
                                    const SnapshotDocument& doc, const std::vector<int32_t>& suffix,
                                    int seq, int max_new_tokens,
                                    QuestionBudget budget = QuestionBudget::Added);

}  // namespace kvbench
