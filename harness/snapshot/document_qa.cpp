#include "harness/snapshot/document_qa.h"

#include <algorithm>
#include <chrono>

#include "datasets/prompt.h"
#include "harness/inference.h"
#include "harness/reconstruction.h"
#include "harness/sha256.h"
#include "model/common/error.h"
#include "model/steps.h"

namespace kvbench {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

Instance layout(const std::string& preamble, const std::string& document,
                const std::string& question, const std::string& answer_prefix) {
  Instance in;
  in.id = "document";
  in.task = "qa";
  in.grader = "contains";
  in.preamble = preamble;
  in.context = document;
  in.question = question;
  in.answer_prefix = answer_prefix;
  in.max_new_tokens = 0;  // the callers check the context themselves
  return in;
}

}  // namespace

SnapshotDocument document_prefix(const LlamaModel& model, const std::string& preamble,
                                 const std::string& document) {
  if (document.empty()) throw InputError("the document is empty");
  // A placeholder question: cut after the document, the prefix does not
  // depend on it.
  const Prompt p = build_prompt(model, layout(preamble, document, "?", ""),
                                /*question_first=*/false, /*cut_after_context=*/true);
  SnapshotDocument doc;
  doc.tokens.assign(p.tokens.begin(), p.tokens.begin() + p.context_tokens.end);
  doc.context_begin = p.context_tokens.begin;
  const int64_t n_ctx = model.config().n_ctx_train;
  if (static_cast<int64_t>(doc.tokens.size()) >= n_ctx)
    throw InputError("the document has " + std::to_string(doc.tokens.size()) +
                     " tokens with the template, the model's context is " + std::to_string(n_ctx));
  return doc;
}

std::vector<int32_t> question_suffix(const LlamaModel& model, const std::string& question,
                                     const std::string& answer_prefix) {
  if (question.empty()) throw InputError("the question is empty");
  // Cut after the document, the suffix is encoded on its own, so an empty
  // document gives the same suffix as any other.
  const Prompt p = build_prompt(model, layout("", "", question, answer_prefix),
                                /*question_first=*/false, /*cut_after_context=*/true);
  return {p.tokens.begin() + p.context_tokens.end, p.tokens.end()};
}

std::unique_ptr<PolicyCache> document_cache(const LlamaModel& model, const PolicySpec& policy,
                                            const SnapshotDocument& doc, uint64_t seed) {
  const CacheContext cc = cache_context(model, static_cast<int64_t>(doc.tokens.size()), seed);
  return PolicyCache::create(policy, cc);
}

double prefill_document(Evaluator& eval, PolicyCache& cache, SnapshotDocument& doc) {
  if (doc.chunk < 1) throw InputError("chunk must be >= 1");
  if (cache.store().known_sequences() != 0)
    throw InputError("prefill_document: the cache is not empty");
  const auto t0 = Clock::now();
  doc.logits.assign(eval.model().config().n_vocab, 0.0f);
  prefill(eval, cache, doc.tokens, fixed_chunks(static_cast<int64_t>(doc.tokens.size()), doc.chunk),
          {.last_logits = doc.logits.data()});
  finish_prompt(eval, cache, doc.tokens, doc.chunk);
  return since(t0);
}

DocumentAnswer answer_from_document(Evaluator& eval, PolicyCache& cache,
                                    const PolicyCache::Checkpoint& checkpoint,
                                    const SnapshotDocument& doc, const std::vector<int32_t>& suffix,
                                    int seq, int max_new_tokens, QuestionBudget budget) {
  const LlamaModel& model = eval.model();
  const int64_t n_ctx = model.config().n_ctx_train;
  const int64_t need = static_cast<int64_t>(doc.tokens.size() + suffix.size()) + max_new_tokens;
  if (need > n_ctx)
    throw InputError("document (" + std::to_string(doc.tokens.size()) + " tokens) + question (" +
                     std::to_string(suffix.size()) + ") + " + std::to_string(max_new_tokens) +
                     " new tokens exceed the model's context of " + std::to_string(n_ctx));
  if (seq < 1 || seq >= CacheStore::kMaxSeqs)
    throw InputError("answer_from_document: sequence " + std::to_string(seq));
  if (suffix.empty()) throw InputError("answer_from_document: empty question");
  if (cache.contiguous_positions())
    throw InputError(
        "policy '" + to_string(cache.spec()) +
        "': contiguous positions renumber each sequence, so questions cannot share the document");
  DocumentAnswer a;
  const Tokenizer& tok = model.tokenizer();
  std::vector<float> logits(model.config().n_vocab);
  // Whatever happens, the cache goes back to the document.
  try {
    cache.pause_eviction(budget == QuestionBudget::Added);
    cache.seq_cp(0, seq, -1, -1);
    const auto t0 = Clock::now();
    const int32_t pos = cache.next_position(seq);
    const int64_t n = static_cast<int64_t>(suffix.size());
    prefill(eval, cache, suffix, fixed_chunks(n, doc.chunk),
            {.seq = seq, .start = pos, .last_logits = logits.data()});
    cache.end_prefill();
    a.prefill_seconds = since(t0);
    a.first_logits = logits;
    a.first_logits_sha256 = sha256_hex(logits.data(), logits.size() * sizeof(float));
    const Decoded d = decode(eval, cache, logits,
                             {.seq = seq,
                              .start = pos + static_cast<int32_t>(n),
                              .max_new_tokens = max_new_tokens,
                              .n_ctx = n_ctx});
    a.tokens = d.tokens;
    a.stopped_at_eog = d.stopped_at_eog;
    a.decode_seconds = d.first_token_seconds + d.seconds;
  } catch (...) {
    cache.pause_eviction(false);
    try {
      cache.rollback(checkpoint);
    } catch (...) {
    }
    throw;
  }
  cache.pause_eviction(false);
  cache.rollback(checkpoint);
  a.text = tok.decode(a.tokens);
  return a;
}

}  // namespace kvbench
