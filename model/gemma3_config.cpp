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
  // Gemma rotates the two halves of each head (llama.cpp's NEOX RoPE), and
  // its RMS epsilon defaults to 1e-6.
  c.rope.neox = true;
  c.rms_eps = f.get_f32_or("gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
  c.norms.qk = true;
  c.norms.post_attention = true;
  c.norms.post_ffn = true;
  c.activation = Activation::GeluTanh;

  const std::string window_key = "gemma3.attention.sliding_window";
  if (f.has(window_key)) {
    const uint32_t w = f.get_u32(window_key);
    if (w > (1u << 24))
      fail(f, "key '" + window_key + "' = " + std::to_string(w) + " is out of range");
    c.sliding_window = static_cast<int32_t>(w);
  }
  if (c.sliding_window > 0) {
    const std::string pattern_key = "gemma3.attention.sliding_window_pattern";
    const GgufValue* pattern = f.find(pattern_key);
    if (pattern != nullptr && pattern->type == GgufType::ARRAY) {
      const std::vector<bool> items = f.get_bool_array(pattern_key);
      if (items.size() != static_cast<size_t>(c.n_layers))
        fail(f, "key '" + pattern_key + "' has " + std::to_string(items.size()) + " entries for " +
                    std::to_string(c.n_layers) + " layers (gemma3.block_count)");
      for (int l = 0; l < c.n_layers; ++l) c.local[l] = items[l];
    } else {
      const uint32_t period = pattern != nullptr ? f.get_u32(pattern_key) : 6;
      // llama.cpp's set_swa_pattern: period 0 makes every layer local.
      for (int l = 0; l < c.n_layers; ++l)
        c.local[l] = period == 0 || static_cast<uint32_t>(l) % period < period - 1;
    }
  }
  c.rope_local = c.rope;
  c.rope_local.freq_base = f.get_f32_or("gemma3.rope.freq_base_swa", 10000.0f);
  if (!(c.rope_local.freq_base > 1.0f)) fail(f, "gemma3.rope.freq_base_swa must be > 1");
  // Linear scaling (gemma3.rope.scaling.*) applies to the global layers only,
  // as in llama.cpp (the local layers keep rope_freq_scale_train_swa = 1).
  c.rope_local.freq_scale = 1.0f;

  if (f.has("gemma3.attention.scale")) {
    c.attn_scale = f.get_f32_or("gemma3.attention.scale", 0.0f);
    if (!(c.attn_scale > 0.0f && c.attn_scale < 1e3f))
      fail(f, "gemma3.attention.scale must be > 0");
  } else {
    const int pre_attn = c.n_layers == 62 ? c.dim / c.n_heads : c.head_dim;
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(pre_attn));
  }
  c.embed_scale = std::sqrt(static_cast<float>(c.dim));
  c.final_logit_softcap = f.get_f32_or("gemma3.final_logit_softcapping", 0.0f);
  if (!(c.final_logit_softcap >= 0.0f && c.final_logit_softcap < 1e6f))
    fail(f, "gemma3.final_logit_softcapping must be >= 0");
}

}  // namespace kvbench
