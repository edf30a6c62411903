#include "harness/inference.h"

#include <algorithm>
#include <numeric>

#include "model/common/error.h"

namespace kvbench {

std::vector<int32_t> prompt_tokens(const LlamaModel& model, const std::string& prompt, bool chat) {
  std::string text = prompt;
  if (chat) text = model.chat_template().apply({{"user", prompt}}, true);
  auto ids = model.tokenizer().encode(text, /*add_bos=*/true, /*parse_special=*/true);
  if (ids.empty()) throw InputError("the prompt is empty");
  if (static_cast<int64_t>(ids.size()) > model.config().n_ctx_train)
    throw InputError("the prompt has " + std::to_string(ids.size()) +
                     " tokens, more than the model's context of " +
                     std::to_string(model.config().n_ctx_train));
  return ids;
}

void prefill(Evaluator& eval, KvCache& cache, const std::vector<int32_t>& tokens, int32_t start,
             int chunk, float* last_logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  std::vector<int32_t> pos;
  for (int64_t b = 0; b < n; b += chunk) {
    const int64_t e = std::min<int64_t>(n, b + chunk);
    pos.resize(e - b);
    std::iota(pos.begin(), pos.end(), static_cast<int32_t>(start + b));
    const bool last = e == n && last_logits;
    eval.step(std::span<const int32_t>(tokens.data() + b, e - b), pos, 0, StepPhase::Prefill, cache,
              last ? Logits::Last : Logits::None, last ? last_logits : nullptr);
  }
}

}  // namespace kvbench
