#include "model/qwen_config.h"

#include "model/llama_config.h"

namespace kvbench {

void read_qwen2_config(const GgufFile&, LlamaConfig& c) {
  // Rotate-half pairing (HF's rotate_half); the RMS epsilon is the shared
  // ARCH.attention.layer_norm_rms_epsilon (required by llama.cpp; 1e-6 in
  // every Qwen2 file).
  c.rope.neox = true;
}

void read_qwen3_config(const GgufFile& f, LlamaConfig& c) {
  read_qwen2_config(f, c);
  c.norms.qk = true;  // q_norm / k_norm over each head's head_dim, before RoPE
}

}  // namespace kvbench
