#include "model/gemma3_weights.h"

#include "model/model_tensors.h"

namespace kvbench {

void load_gemma3_norms(ModelTensors& t, const LlamaConfig& c, const std::string& p,
                       LayerWeights& L) {
  L.q_norm = t.vector_f32(p + "attn_q_norm.weight", c.head_dim);
  L.k_norm = t.vector_f32(p + "attn_k_norm.weight", c.head_dim);
  L.attn_post_norm = t.vector_f32(p + "post_attention_norm.weight", c.dim);
  L.ffn_post_norm = t.vector_f32(p + "post_ffw_norm.weight", c.dim);
}

}  // namespace kvbench
