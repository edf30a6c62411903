#include "harness/run/answer.h"

#include <algorithm>
#include <chrono>

#include "model/common/error.h"
#include "model/steps.h"

namespace kvbench {
std::vector<Span> prefill_chunks(const Prompt& prompt, int chunk) {
  const int64_t n = static_cast<int64_t>(prompt.tokens.size());
  const int64_t split = prompt.context_tokens.end > 0 && prompt.context_tokens.end < n
                            ? prompt.context_tokens.end
                            : n;
  std::vector<Span> out;
  for (int64_t b = 0; b < n;) {
    const int64_t e = std::min<int64_t>(b < split ? split : n, b + chunk);
    out.push_back({b, e});
    b = e;
  }
  return out;
}

Answer answer_greedy(Evaluator& eval, KvCache& cache, const Prompt& prompt,
                     const AnswerOptions& o) {
  using clock = std::chrono::steady_clock;
  const LlamaModel& model = eval.model();
  const Tokenizer& tok = model.tokenizer();
  const int64_t n = static_cast<int64_t>(prompt.tokens.size());
  if (n == 0) throw InputError("answer: the prompt is empty");
  if (o.chunk < 1) throw InputError("answer: chunk must be >= 1");
  if (o.max_new_tokens < 0) throw InputError("answer: max_new_tokens must be >= 0");
  const int64_t n_ctx = model.config().n_ctx_train;
  if (n_ctx > 0 && n + o.max_new_tokens > n_ctx)
    throw InputError("answer: prompt of " + std::to_string(n) + " tokens + " +
                     std::to_string(o.max_new_tokens) +
                     " new ones exceeds the model's context of " + std::to_string(n_ctx));
  Answer a;
  a.prompt_tokens = n;
  std::vector<float> logits(model.config().n_vocab);
  const auto t0 = clock::now();
  const std::vector<Span> chunks = prefill_chunks(prompt, o.chunk);
  prefill(eval, cache, prompt.tokens, chunks, {.seq = o.seq, .last_logits = logits.data()});
  a.prefill_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  const Decoded d = decode(eval, cache, logits,
                           {.seq = o.seq,
                            .start = static_cast<int32_t>(n),
                            .max_new_tokens = o.max_new_tokens,
                            .n_ctx = n_ctx});
  a.ttft_seconds = a.prefill_seconds + d.first_token_seconds;
  a.decode_seconds = d.seconds;
  a.tokens = d.tokens;
  a.stopped_at_eog = d.stopped_at_eog;
  a.text = tok.decode(a.tokens);
  return a;
}

}  // namespace kvbench
