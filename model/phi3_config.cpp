#include "model/phi3_config.h"

#include <string>

#include "model/common/error.h"
#include "model/gguf/gguf.h"
#include "model/llama_config.h"

namespace kvbench {
namespace {

[[noreturn]] void fail(const GgufFile& f, const std::string& what) {
  throw InputError(f.path() + ": " + what);
}

// ARCH.attention.sliding_window, bounded; 0 when absent.
int32_t stated_window(const GgufFile& f, const LlamaConfig& c) {
  const std::string key = c.arch_name + ".attention.sliding_window";
  if (!f.has(key)) return 0;
  const uint32_t w = f.get_u32(key);
  if (w > (1u << 24)) fail(f, "key '" + key + "' = " + std::to_string(w) + " is out of range");
  return static_cast<int32_t>(w);
}

}  // namespace

void read_phi3_config(const GgufFile& f, LlamaConfig& c) {
  // Phi-3 rotates halves (llama.cpp's NEOX); its converter writes the head's
  // rotated dimensions (partial_rotary_factor: 3/4 on Phi-4-mini).
  c.rope.neox = true;
  c.fused_qkv_allowed = true;
  c.fused_gate_up = true;
  // llama.cpp: "Phi SWA is currently disabled" (llama.cpp PR 13676); the
  // converter writes 0 for Phi-4 and the HF config's window (2047 on
  // Phi-3-mini) otherwise.
  c.unapplied_sliding_window = stated_window(f, c);

  // As llama.cpp's n_ctx_orig_yarn: the training context when not stated.
  const std::string orig_key = "phi3.rope.scaling.original_context_length";
  c.n_ctx_orig = c.n_ctx_train;
  if (f.has(orig_key)) {
    const uint32_t n = f.get_u32(orig_key);
    if (n == 0 || n > (1u << 24))
      fail(f, "key '" + orig_key + "' = " + std::to_string(n) + " is out of range [1, 16777216]");
    c.n_ctx_orig = static_cast<int>(n);
  }
  // sqrt(1 + ln(scale) / ln(original context)) for LongRoPE files (1.19 on
  // Phi-3.5-mini); llama.cpp multiplies RoPE's cos and sin by it.
  const std::string factor_key = "phi3.rope.scaling.attn_factor";
  c.rope.attn_factor = f.get_f32_or(factor_key, 1.0f);
  if (!(c.rope.attn_factor > 0.0f && c.rope.attn_factor < 16.0f))
    fail(f, "key '" + factor_key + "' is out of range (0, 16)");
}

void read_llama_extras(const GgufFile& f, LlamaConfig& c) {
  c.unapplied_sliding_window = stated_window(f, c);
}

}  // namespace kvbench
