#include "harness/run/answer.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "model/common/error.h"

namespace kvbench {
namespace {

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) -
                              v.begin());  // first maximum on ties
}

}  // namespace

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
  std::vector<int32_t> pos;

  const auto t0 = clock::now();
  for (const Span& c : prefill_chunks(prompt, o.chunk)) {
    pos.resize(c.size());
    std::iota(pos.begin(), pos.end(), static_cast<int32_t>(c.begin));
    const bool last = c.end == n;
    eval.step(std::span<const int32_t>(prompt.tokens.data() + c.begin, c.size()), pos, o.seq,
              StepPhase::Prefill, cache, last ? Logits::Last : Logits::None,
              last ? logits.data() : nullptr);
  }
  const auto t1 = clock::now();
  a.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
  if (o.max_new_tokens == 0) {
    a.ttft_seconds = a.prefill_seconds;
    return a;
  }
  int32_t p = static_cast<int32_t>(n);
  int32_t next = argmax(logits);
  a.ttft_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  const auto t2 = clock::now();
  for (;;) {
    if (tok.is_end_of_generation(next)) {
      a.stopped_at_eog = true;
      break;
    }
    a.tokens.push_back(next);
    if (static_cast<int>(a.tokens.size()) >= o.max_new_tokens) break;
    const int32_t t[1] = {next}, q[1] = {p++};
    eval.step(t, q, o.seq, StepPhase::Decode, cache, Logits::Last, logits.data());
    next = argmax(logits);
  }
  a.decode_seconds = std::chrono::duration<double>(clock::now() - t2).count();
  a.text = tok.decode(a.tokens);
  return a;
}

}  // namespace kvbench
