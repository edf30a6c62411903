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

// The layers' pattern: ARCH.attention.sliding_window (default `window`) and
// ARCH.attention.sliding_window_pattern, an array of per-layer flags or a
// period (default `period`), as llama.cpp's load_swa_pattern reads them.
void read_local_layers(const GgufFile& f, LlamaConfig& c, uint32_t window, uint32_t period) {
  const std::string p = c.arch_name + ".";
  const std::string window_key = p + "attention.sliding_window";
  if (f.has(window_key)) window = f.get_u32(window_key);
  if (window > (1u << 24))
    fail(f, "key '" + window_key + "' = " + std::to_string(window) + " is out of range");
  c.sliding_window = static_cast<int32_t>(window);
  if (c.sliding_window == 0) return;
  const std::string pattern_key = p + "attention.sliding_window_pattern";
  const GgufValue* pattern = f.find(pattern_key);
  if (pattern != nullptr && pattern->type == GgufType::ARRAY) {
    const std::vector<bool> items = f.get_bool_array(pattern_key);
    if (items.size() != static_cast<size_t>(c.n_layers))
      fail(f, "key '" + pattern_key + "' has " + std::to_string(items.size()) + " entries for " +
                  std::to_string(c.n_layers) + " layers (" + p + "block_count)");
    for (int l = 0; l < c.n_layers; ++l) c.local[l] = items[l];
  } else {
    if (pattern != nullptr) period = f.get_u32(pattern_key);
    // llama.cpp's set_swa_pattern: period 0 makes every layer local.
    for (int l = 0; l < c.n_layers; ++l)
      c.local[l] = period == 0 || static_cast<uint32_t>(l) % period < period - 1;
  }
}

// ARCH.final_logit_softcapping: >= 0 (0: none); `fallback` when absent.
float read_cap(const GgufFile& f, const std::string& key, float fallback, bool zero_allowed) {
  const float cap = f.get_f32_or(key, fallback);
  if (!(cap >= 0.0f && cap < 1e6f) || (!zero_allowed && cap == 0.0f))
    fail(f, key + (zero_allowed ? " must be >= 0" : " must be > 0"));
  return cap;
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
  // No window unless stated; every sixth layer global.
  read_local_layers(f, c, 0, 6);
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
  c.final_logit_softcap = read_cap(f, "gemma3.final_logit_softcapping", 0.0f, true);
}

void read_gemma2_config(const GgufFile& f, LlamaConfig& c) {
  // Gemma 3's block without the QK-norms, with soft-capped attention scores
  // (llama.cpp's gemma2 loader: hparams.attn_soft_cap).
  c.rope.neox = true;
  c.rms_eps = f.get_f32_or("gemma2.attention.layer_norm_rms_epsilon", 1e-6f);
  c.norms.post_attention = true;
  c.norms.post_ffn = true;
  c.activation = Activation::GeluTanh;
  // A window of 4096 unless stated; every other layer local, from layer 0.
  read_local_layers(f, c, 4096, 2);
  // The local layers' RoPE is the global one unless stated (base and scale).
  c.rope_local = c.rope;
  c.rope_local.freq_base = f.get_f32_or("gemma2.rope.freq_base_swa", c.rope.freq_base);
  if (!(c.rope_local.freq_base > 1.0f)) fail(f, "gemma2.rope.freq_base_swa must be > 1");
  // gemma_pytorch's query_pre_attn_scalar: dim / heads on the 27B (46
  // layers), the head size otherwise; llama.cpp reads no key for it.
  const int pre_attn = c.n_layers == 46 ? c.dim / c.n_heads : c.head_dim;
  c.attn_scale = 1.0f / std::sqrt(static_cast<float>(pre_attn));
  c.embed_scale = std::sqrt(static_cast<float>(c.dim));
  // llama.cpp's defaults: 50 and 30, always applied (it divides by them).
  c.attn_logit_softcap = read_cap(f, "gemma2.attn_logit_softcapping", 50.0f, false);
  c.final_logit_softcap = read_cap(f, "gemma2.final_logit_softcapping", 30.0f, false);
}

}  // namespace kvbench
