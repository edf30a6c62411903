#include "harness/inference.h"

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

CacheContext cache_context(const LlamaModel& model, int64_t context_tokens, uint64_t seed) {
  CacheContext cc;
  cc.shape = model.kv_shape();
  cc.rope = model.config().rope;
  // Gemma 3's local layers: llama.cpp's ISWA cache (each keeps its window).
  const LlamaConfig& c = model.config();
  if (c.arch == Arch::Gemma3 && c.gemma3.sliding_window > 0) {
    cc.layer_window.assign(c.n_layers, 0);
    for (int l = 0; l < c.n_layers; ++l) cc.layer_window[l] = c.gemma3.window_of(l);
    cc.rope_local = c.gemma3.rope_local;
  }
  cc.context_tokens = context_tokens;
  cc.seed = seed;
  return cc;
}

}  // namespace kvbench
