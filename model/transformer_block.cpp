// The transformer block of every architecture kvbench runs, over the
// evaluator's buffers, kernels and cache. The config's fields pick its pieces
// (llama_config.h); nothing here asks which architecture it is:
//
//   xn = pre_attention_norm(x)
//   q = rope(q_norm(Wq xn + bq)), k = rope(k_norm(Wk xn + bk)), v = Wv xn + bv
//   x += post_attention_norm(Wo . attention(q, k, v))
//   xn = pre_ffn_norm(x)
//   x += post_ffn_norm(W_down (act(W_gate xn) * W_up xn))
//
// Each norm is applied only when config.norms names it (an absent pre-norm
// passes x itself); the biases only when the file has them (Qwen2). act is SiLU (SwiGLU) or
// GELU-tanh (GeGLU). RoPE pairs adjacent dimensions or halves (RopeConfig::neox), at the layer's
// angles: a local layer has its own base (rope_local). Attention sees the layer's window (0 on a
// global layer: every key up to the query) and scales scores by attn_scale (0: 1 / sqrt(head_dim)).
//
// LLaMA: the pre-norms, SiLU, adjacent pairs, every layer global. Gemma 3:
// every norm, GELU-tanh, halves, local layers with a sliding window. Qwen2:
// LLaMA's with Q/K/V biases and halves; Qwen3: LLaMA's with QK-norms and halves. Phi-3:
// LLaMA's with halves, LongRoPE's divisors and attention factor (in the RoPE table); its fused
// attn_qkv and gate/up tensors arrive taken apart (llama_weights.cpp).
#include "model/evaluator.h"
#include "model/ops/gelu.h"
#include "model/ops/rope.h"
#include "model/ops/silu.h"

namespace kvbench {
namespace {

// gate[i] = act(gate[i]) * up[i] for i < n.
void gated_activation(Activation act, float* gate, const float* up, int64_t n, CpuPath path) {
  switch (act) {
    case Activation::Silu:
      return silu_mul(gate, up, n, path);
    case Activation::GeluTanh:
      return geglu(gate, up, n, path);
  }
}

}  // namespace

const float* Evaluator::block_input(bool norm, const std::vector<float>& weight, int64_t n) {
  if (!norm) return x_.data();
  rms_norm(x_.data(), weight, xn_.data(), n);
  return xn_.data();
}

void Evaluator::block(int l, std::span<const int32_t> positions, std::span<KvCache* const> caches) {
  const LlamaConfig& c = model_.config();
  const BlockNorms& norms = c.norms;
  const LayerWeights& L = model_.weights().layers[l];
  const int64_t n = static_cast<int64_t>(positions.size());

  // Attention: x += post_norm(Wo . attention(q, k, v)).
  const float* in = block_input(norms.pre_attention, L.attn_norm, n);  // [n][dim]
  const MatmulOutput qkv[] = {{&L.wq, q_.data(), c.q_dim()},
                              {&L.wk, k_.data(), c.kv_dim()},
                              {&L.wv, v_.data(), c.kv_dim()}};
  matmul_group(qkv, in, n, pool_, matmul_scratch_, matmul_options_);
  if (!L.bq.empty()) {
    add_bias_rows(q_.data(), L.bq, n);
    add_bias_rows(k_.data(), L.bk, n);
    add_bias_rows(v_.data(), L.bv, n);
  }
  if (norms.qk) {
    rms_norm_rows(q_.data(), L.q_norm, q_.data(), n * c.n_heads, c.head_dim);
    rms_norm_rows(k_.data(), L.k_norm, k_.data(), n * c.n_kv_heads, c.head_dim);
  }
  const RopeTable& rope = c.is_local(l) ? rope_local_ : rope_;
  const auto rotate = c.rope_of(l).neox ? rope_rotate_neox_cs : rope_rotate_cs;
  for_tokens(n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float *cs = rope.cos_at(t), *sn = rope.sin_at(t);
      rotate(q_.data() + t * c.q_dim(), c.n_heads, c.head_dim, cs, sn, rope.half);
      rotate(k_.data() + t * c.kv_dim(), c.n_kv_heads, c.head_dim, cs, sn, rope.half);
    }
  });
  AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim};
  shape.window = c.window_of(l);
  shape.scale = c.attn_scale;
  shape.softcap = c.attn_logit_softcap;
  shape.bf16 = bf16_attention_;
  shape.q8_query = q8_query_;
  // Rows [t0, t0 + count) go to `cache`: all n when the step has one cache,
  // else each row to its own (a batched decode step), one call at a time.
  auto attend_rows = [&](KvCache& cache, int64_t t0, int64_t count) {
    const auto pos = positions.subspan(t0, count);
    cache.append(l, k_.data() + t0 * c.kv_dim(), v_.data() + t0 * c.kv_dim());
    if (cache.attention_request(l).queries)
      cache.observe_queries(l, q_.data() + t0 * c.q_dim(), pos);
    attend(shape, l, q_.data() + t0 * c.q_dim(), pos, cache, attn_.data() + t0 * c.q_dim(), pool_,
           attention_scratch_);
  };
  if (caches.size() == 1)
    attend_rows(*caches[0], 0, n);
  else
    for (int64_t t = 0; t < n; ++t) attend_rows(*caches[t], t, 1);
  matmul(L.wo, attn_.data(), n, proj_.data(), c.dim, pool_, matmul_scratch_, matmul_options_);
  if (norms.post_attention) rms_norm(proj_.data(), L.attn_post_norm, proj_.data(), n);
  add_residual(n);

  // Gated feed-forward: x += post_norm(W_down (act(W_gate xn) * W_up xn)).
  in = block_input(norms.pre_ffn, L.ffn_norm, n);
  const MatmulOutput gate_up[] = {{&L.w_gate, gate_.data(), c.ffn_dim},
                                  {&L.w_up, up_.data(), c.ffn_dim}};
  matmul_group(gate_up, in, n, pool_, matmul_scratch_, matmul_options_);
  for_tokens(n, [&](int64_t t0, int64_t t1) {
    gated_activation(c.activation, gate_.data() + t0 * c.ffn_dim, up_.data() + t0 * c.ffn_dim,
                     (t1 - t0) * c.ffn_dim, matmul_options_.path);
  });
  matmul(L.w_down, gate_.data(), n, proj_.data(), c.dim, pool_, matmul_scratch_, matmul_options_);
  if (norms.post_ffn) rms_norm(proj_.data(), L.ffn_post_norm, proj_.data(), n);
  add_residual(n);
}

}  // namespace kvbench
