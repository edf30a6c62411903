#include "model/gemma3_config.h"

#include <cmath>
#include <string>

#include "model/common/error.h"
#include "model/gguf/gguf.h"
#include "model/llama_config.h"

namespace kvbench {
namespace {

[[noreturn]] void fail(const GgufFile& f, const std::string& what) {
  throw InputError(f.path() + ": " + what);
}

}  // namespace

void read_gemma3_config(const GgufFile& f, LlamaConfig& c) {
  Gemma3Config& g = c.gemma3;
  const std::string window_key = "gemma3.attention.sliding_window";
  if (f.has(window_key)) {
    const uint32_t w = f.get_u32(window_key);
    if (w > (1u << 24))
      fail(f, "key '" + window_key + "' = " + std::to_string(w) + " is out of range");
    g.sliding_window = static_cast<int32_t>(w);
  }
  g.local.assign(c.n_layers, false);
  if (g.sliding_window > 0) {
    const std::string pattern_key = "gemma3.attention.sliding_window_pattern";
    const GgufValue* pattern = f.find(pattern_key);
    if (pattern != nullptr && pattern->type == GgufType::ARRAY) {
      const std::vector<bool> items = f.get_bool_array(pattern_key);
      if (items.size() != static_cast<size_t>(c.n_layers))
        fail(f, "key '" + pattern_key + "' has " + std::to_string(items.size()) + " entries for " +
                    std::to_string(c.n_layers) + " layers (gemma3.block_count)");
      for (int l = 0; l < c.n_layers; ++l) g.local[l] = items[l];
    } else {
      const uint32_t period = pattern != nullptr ? f.get_u32(pattern_key) : 6;
      // llama.cpp's set_swa_pattern: period 0 makes every layer local.
      for (int l = 0; l < c.n_layers; ++l)
        g.local[l] = period == 0 || static_cast<uint32_t>(l) % period < period - 1;
    }
  }
  g.rope_local = c.rope;
  g.rope_local.freq_base = f.get_f32_or("gemma3.rope.freq_base_swa", 10000.0f);
  if (!(g.rope_local.freq_base > 1.0f)) fail(f, "gemma3.rope.freq_base_swa must be > 1");
  // Linear scaling (gemma3.rope.scaling.*) applies to the global layers only,
  // as in llama.cpp (the local layers keep rope_freq_scale_train_swa = 1).
  g.rope_local.freq_scale = 1.0f;

  if (f.has("gemma3.attention.scale")) {
    g.attn_scale = f.get_f32_or("gemma3.attention.scale", 0.0f);
    if (!(g.attn_scale > 0.0f && g.attn_scale < 1e3f))
      fail(f, "gemma3.attention.scale must be > 0");
  } else {
    const int pre_attn = c.n_layers == 62 ? c.dim / c.n_heads : c.head_dim;
    g.attn_scale = 1.0f / std::sqrt(static_cast<float>(pre_attn));
  }
  g.embed_scale = std::sqrt(static_cast<float>(c.dim));
  g.final_logit_softcap = f.get_f32_or("gemma3.final_logit_softcapping", 0.0f);
  if (!(g.final_logit_softcap >= 0.0f && g.final_logit_softcap < 1e6f))
    fail(f, "gemma3.final_logit_softcapping must be >= 0");
}

}  // namespace kvbench
