#include "harness/inference.h"

#include <memory>
#include <mutex>
#include <vector>

#include "model/common/error.h"
#include "model/gguf/ggml_types.h"

namespace kvbench {
namespace {

// The model's o_proj, each layer dequantized (dequantize_row: exactly the
// f32 the exact path multiplies with) the first time a part asks for it.
// Holds pointers into the model's mapping: the model outlives its caches.
class ModelOutputProjection final : public OutputProjection {
 public:
  explicit ModelOutputProjection(const LlamaModel& model)
      : model_(model),
        once_(std::make_unique<std::once_flag[]>(model.config().n_layers)),
        rows_(model.config().n_layers) {}
  const float* layer(int l) const override {
    std::call_once(once_[l], [&] {
      const WeightMatrix& w = model_.weights().layers[l].wo;
      rows_[l].resize(static_cast<size_t>(w.rows * w.cols));
      for (int64_t r = 0; r < w.rows; ++r)
        dequantize_row(w.type, w.row(r), rows_[l].data() + r * w.cols, w.cols);
    });
    return rows_[l].data();
  }
  int64_t dim() const override { return model_.config().dim; }

 private:
  const LlamaModel& model_;
  std::unique_ptr<std::once_flag[]> once_;
  mutable std::vector<std::vector<float>> rows_;  // [n_layers][dim * n_q_heads * head_dim]
};

}  // namespace

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
  if (c.sliding_window > 0) {
    cc.layer_window.assign(c.n_layers, 0);
    for (int l = 0; l < c.n_layers; ++l) cc.layer_window[l] = c.window_of(l);
    cc.rope_local = c.rope_local;
  }
  cc.attn_scale = c.attn_scale;
  cc.attn_softcap = c.attn_logit_softcap;
  cc.context_tokens = context_tokens;
  cc.seed = seed;
  cc.output_projection = std::make_shared<ModelOutputProjection>(model);
  return cc;
}

}  // namespace kvbench
