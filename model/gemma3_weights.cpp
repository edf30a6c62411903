#include "model/gemma3_weights.h"

namespace kvbench {

void load_gemma3_norms(const GgufFile& f, const LlamaConfig& c, const std::string& p,
                       LayerWeights& L) {
  L.q_norm = load_vector_f32(f, p + "attn_q_norm.weight", c.head_dim);
  L.k_norm = load_vector_f32(f, p + "attn_k_norm.weight", c.head_dim);
  L.attn_post_norm = load_vector_f32(f, p + "post_attention_norm.weight", c.dim);
  L.ffn_post_norm = load_vector_f32(f, p + "post_ffw_norm.weight", c.dim);
}

}  // namespace kvbench
