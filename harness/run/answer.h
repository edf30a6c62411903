// Greedy answering of one prompt, shared by `kvbench dataset calibrate` and
// the experiment runner: chunked prefill through the cache (the cache's
// policy maintains itself after every chunk and decode step), then greedy
// decoding until end-of-generation or max_new_tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/prompt.h"
#include "model/evaluator.h"
#include "model/ops/kv_cache.h"

namespace kvbench {

struct AnswerOptions {
  int max_new_tokens = 32;
  // Prefill chunk size. Chunks never straddle the end of the context, so the
  // question (and template tail) always arrive as their own step(s): a
  // policy that selects after prefill sees the question last.
  int chunk = 512;
  int seq = 0;  // sequence id in the cache
};

struct Answer {
  std::string text;             // decoded generated tokens (no end-of-generation token)
  std::vector<int32_t> tokens;  // generated ids
  int64_t prompt_tokens = 0;
  bool stopped_at_eog = false;  // false: hit max_new_tokens or the model's context
  double prefill_seconds = 0;   // all prompt chunks
  double decode_seconds = 0;    // decode steps after the first token
  double ttft_seconds = 0;      // start to first generated token (prefill + its argmax)
};

// The prefill chunk schedule of a prompt: every `chunk` tokens, plus a break
// at the end of the context, so that the question (and the template's tail)
// always arrive as steps of their own. The experiment runner uses the same
// schedule, so shared and unshared prefills see identical steps.
std::vector<Span> prefill_chunks(const Prompt& prompt, int chunk);

// Positions are 0..n-1 for the prompt, then continue. The cache must be empty
// for `seq`. InputError when the prompt is empty or prompt + max_new_tokens
// exceeds the model's context.
Answer answer_greedy(Evaluator& eval, KvCache& cache, const Prompt& prompt,
                     const AnswerOptions& options);

}  // namespace kvbench
