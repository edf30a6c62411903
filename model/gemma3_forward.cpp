// The Gemma 3 block, next to the LLaMA one (model/evaluator.cpp) over the
// same buffers, kernels and cache. What differs from LLaMA:
//  - the token embeddings are multiplied by sqrt(dim);
//  - queries and keys get an RMS norm per head (QK-norm) before RoPE, which
//    pairs the two halves of each head (NEOX);
//  - local layers attend over a sliding window (the cache shows every entry,
//    the mask hides those a window or more behind the query) with their own
//    RoPE base (10,000); global layers see everything with the file's base;
//  - scores are scaled by the file's attention scale;
//  - the attention and feed-forward outputs are RMS-normed again before they
//    join the residual stream (post-norms);
//  - the feed-forward is GELU(tanh)-gated (GeGLU) instead of SwiGLU;
//  - logits may be soft-capped: cap * tanh(logit / cap).
// Every norm weight is used as the file stores it: the converter already
// added Gemma's "1 +".
#include <cmath>

#include "model/evaluator.h"
#include "model/ops/gelu.h"
#include "model/ops/rope.h"

namespace kvbench {

void Evaluator::gemma3_scale_embeddings(int64_t n) {
  const float scale = model_.config().embed_scale;
  const int64_t dim = model_.config().dim;
  for (int64_t i = 0; i < n * dim; ++i) x_[i] *= scale;
}

void Evaluator::gemma3_cap_logits(float* logits, int64_t rows) const {
  const float cap = model_.config().final_logit_softcap;
  if (cap <= 0.0f) return;
  const int64_t n = rows * model_.config().n_vocab;
  for (int64_t i = 0; i < n; ++i) logits[i] = cap * std::tanh(logits[i] / cap);
}

void Evaluator::gemma3_layer(int l, std::span<const int32_t> positions, KvCache& cache) {
  const LlamaConfig& c = model_.config();
  const LayerWeights& L = model_.weights().layers[l];
  const int64_t n = static_cast<int64_t>(positions.size());
  const bool local = c.is_local(l);
  const RopeTable& rope = local ? rope_local_ : rope_;

  // Attention block: x += post_norm(Wo . attention(q, k, v)) with
  // q = rope(q_norm(Wq xn)), k = rope(k_norm(Wk xn)), v = Wv xn.
  rms_norm(x_.data(), L.attn_norm, xn_.data(), n);
  const MatmulOutput qkv[] = {{&L.wq, q_.data(), c.q_dim()},
                              {&L.wk, k_.data(), c.kv_dim()},
                              {&L.wv, v_.data(), c.kv_dim()}};
  matmul_group(qkv, xn_.data(), n, pool_, matmul_scratch_, matmul_options_);
  rms_norm_rows(q_.data(), L.q_norm, q_.data(), n * c.n_heads, c.head_dim);
  rms_norm_rows(k_.data(), L.k_norm, k_.data(), n * c.n_kv_heads, c.head_dim);
  for_tokens(n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float *cs = rope.cos_at(t), *sn = rope.sin_at(t);
      rope_rotate_neox_cs(q_.data() + t * c.q_dim(), c.n_heads, c.head_dim, cs, sn, rope.half);
      rope_rotate_neox_cs(k_.data() + t * c.kv_dim(), c.n_kv_heads, c.head_dim, cs, sn, rope.half);
    }
  });
  cache.append(l, k_.data(), v_.data());
  if (cache.attention_request(l).queries) cache.observe_queries(l, q_.data(), positions);
  AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim};
  shape.window = c.window_of(l);
  shape.scale = c.attn_scale;
  shape.bf16 = bf16_attention_;
  attend(shape, l, q_.data(), positions, cache, attn_.data(), pool_, attention_scratch_);
  matmul(L.wo, attn_.data(), n, proj_.data(), c.dim, pool_, matmul_scratch_, matmul_options_);
  rms_norm(proj_.data(), L.attn_post_norm, proj_.data(), n);
  add_residual(n);

  // Feed-forward block: x += post_norm(W_down (gelu(W_gate xn) * W_up xn)).
  rms_norm(x_.data(), L.ffn_norm, xn_.data(), n);
  const MatmulOutput gate_up[] = {{&L.w_gate, gate_.data(), c.ffn_dim},
                                  {&L.w_up, up_.data(), c.ffn_dim}};
  matmul_group(gate_up, xn_.data(), n, pool_, matmul_scratch_, matmul_options_);
  for_tokens(n, [&](int64_t t0, int64_t t1) {
    geglu(gate_.data() + t0 * c.ffn_dim, up_.data() + t0 * c.ffn_dim, (t1 - t0) * c.ffn_dim,
          matmul_options_.path);
  });
  matmul(L.w_down, gate_.data(), n, proj_.data(), c.dim, pool_, matmul_scratch_, matmul_options_);
  rms_norm(proj_.data(), L.ffn_post_norm, proj_.data(), n);
  add_residual(n);
}

}  // namespace kvbench
