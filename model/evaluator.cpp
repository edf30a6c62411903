#include "model/evaluator.h"

#include <cassert>
#include <cmath>

#include "model/ops/rope.h"
#include "model/ops/silu.h"

namespace kvbench {

Evaluator::Evaluator(const LlamaModel& model, int n_threads, MatmulMode mode)
    : model_(model),
      pool_(n_threads),
      matmul_options_{mode, default_cpu_path()},
      inv_freq_(rope_inv_freq(model.config().rope)) {
  if (model.config().arch == Arch::Gemma3)
    inv_freq_local_ = rope_inv_freq(model.config().rope_local);
}

void Evaluator::ensure_capacity(int64_t n) {
  if (n <= capacity_) return;
  const LlamaConfig& c = model_.config();
  capacity_ = n;
  x_.resize(n * c.dim);
  xn_.resize(n * c.dim);
  q_.resize(n * c.q_dim());
  k_.resize(n * c.kv_dim());
  v_.resize(n * c.kv_dim());
  attn_.resize(n * c.q_dim());
  gate_.resize(n * c.ffn_dim);
  up_.resize(n * c.ffn_dim);
  proj_.resize(n * c.dim);
}

// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight, sum of squares in double.
void Evaluator::rms_norm(const float* x, const std::vector<float>& weight, float* out,
                         int64_t n_tokens) {
  rms_norm_rows(x, weight, out, n_tokens, model_.config().dim);
}

void Evaluator::rms_norm_rows(const float* x, const std::vector<float>& weight, float* out,
                              int64_t n_rows, int width) {
  const float eps = model_.config().rms_eps;
  for_tokens(n_rows, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* xt = x + t * width;
      double sum = 0.0;
      for (int i = 0; i < width; ++i) sum += static_cast<double>(xt[i]) * xt[i];
      const float scale = 1.0f / std::sqrt(static_cast<float>(sum / width) + eps);
      float* ot = out + t * width;
      for (int i = 0; i < width; ++i) ot[i] = xt[i] * scale * weight[i];
    }
  });
}

// x[t] += proj[t] for the first n tokens.
void Evaluator::add_residual(int64_t n) {
  const int64_t dim = model_.config().dim;
  for_tokens(n, [&](int64_t t0, int64_t t1) {
    for (int64_t i = t0 * dim; i < t1 * dim; ++i) x_[i] += proj_[i];
  });
}

// A LLaMA block: x += Wo . attention(rope(Wq xn), rope(Wk xn), Wv xn), then
// x += W_down (silu(W_gate xn) * W_up xn), each with its RMS norm in front.
void Evaluator::llama_layer(int l, std::span<const int32_t> positions, KvCache& cache) {
  const LlamaConfig& c = model_.config();
  const LayerWeights& L = model_.weights().layers[l];
  const int64_t n = static_cast<int64_t>(positions.size());
  AttentionShape attn_shape{c.n_heads, c.n_kv_heads, c.head_dim};
  attn_shape.bf16 = bf16_attention_;
  // Attention block: x += Wo . attention(rope(Wq xn), rope(Wk xn), Wv xn)
  rms_norm(x_.data(), L.attn_norm, xn_.data(), n);
  const MatmulOutput qkv[] = {{&L.wq, q_.data(), c.q_dim()},
                              {&L.wk, k_.data(), c.kv_dim()},
                              {&L.wv, v_.data(), c.kv_dim()}};
  matmul_group(qkv, xn_.data(), n, pool_, matmul_scratch_, matmul_options_);
  for_tokens(n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float *cs = rope_.cos_at(t), *sn = rope_.sin_at(t);
      rope_rotate_cs(q_.data() + t * c.q_dim(), c.n_heads, c.head_dim, cs, sn, rope_.half);
      rope_rotate_cs(k_.data() + t * c.kv_dim(), c.n_kv_heads, c.head_dim, cs, sn, rope_.half);
    }
  });
  cache.append(l, k_.data(), v_.data());
  if (cache.attention_request(l).queries) cache.observe_queries(l, q_.data(), positions);
  attend(attn_shape, l, q_.data(), positions, cache, attn_.data(), pool_, attention_scratch_);
  matmul(L.wo, attn_.data(), n, proj_.data(), c.dim, pool_, matmul_scratch_, matmul_options_);
  add_residual(n);

  // Feed-forward block (SwiGLU): x += W_down (silu(W_gate xn) * W_up xn)
  rms_norm(x_.data(), L.ffn_norm, xn_.data(), n);
  const MatmulOutput gate_up[] = {{&L.w_gate, gate_.data(), c.ffn_dim},
                                  {&L.w_up, up_.data(), c.ffn_dim}};
  matmul_group(gate_up, xn_.data(), n, pool_, matmul_scratch_, matmul_options_);
  for_tokens(n, [&](int64_t t0, int64_t t1) {
    silu_mul(gate_.data() + t0 * c.ffn_dim, up_.data() + t0 * c.ffn_dim, (t1 - t0) * c.ffn_dim,
             matmul_options_.path);
  });
  matmul(L.w_down, gate_.data(), n, proj_.data(), c.dim, pool_, matmul_scratch_, matmul_options_);
  add_residual(n);
}

void Evaluator::step(std::span<const int32_t> tokens, std::span<const int32_t> positions, int seq,
                     StepPhase phase, KvCache& cache, Logits which, float* logits) {
  assert(tokens.size() == positions.size() && !tokens.empty());
  const LlamaConfig& c = model_.config();
  const LlamaWeights& w = model_.weights();
  const int64_t n = static_cast<int64_t>(tokens.size());
  ensure_capacity(n);

  // x[t] = token_embd[tokens[t]]   [n][dim]
  for (int64_t t = 0; t < n; ++t) {
    assert(tokens[t] >= 0 && tokens[t] < c.n_vocab);
    dequantize_row(w.tok_embd.type, w.tok_embd.row(tokens[t]), x_.data() + t * c.dim, c.dim);
  }
  if (c.arch == Arch::Gemma3) gemma3_scale_embeddings(n);

  // The rotary angles' cosines and sines at this step's positions, once for
  // all layers.
  rope_.resize(n, inv_freq_);
  if (c.arch == Arch::Gemma3) rope_local_.resize(n, inv_freq_local_);
  for_tokens(n, [&](int64_t t0, int64_t t1) {
    rope_.fill(positions, t0, t1, inv_freq_);
    if (c.arch == Arch::Gemma3) rope_local_.fill(positions, t0, t1, inv_freq_local_);
  });

  StepInfo info;
  info.seq = seq;
  info.phase = phase;
  info.positions = positions;
  info.tokens = tokens;
  cache.begin_step(info);

  for (int l = 0; l < c.n_layers; ++l) {
    switch (c.arch) {
      case Arch::Llama:
        llama_layer(l, positions, cache);
        break;
      case Arch::Gemma3:
        gemma3_layer(l, positions, cache);
        break;
    }
  }
  cache.end_step();

  if (which == Logits::None) return;
  // Only the rows whose logits are wanted go through the output layer.
  const int64_t first = which == Logits::Last ? n - 1 : 0;
  const int64_t rows = n - first;
  rms_norm(x_.data() + first * c.dim, w.output_norm, xn_.data(), rows);
  matmul(w.output, xn_.data(), rows, logits, c.n_vocab, pool_, matmul_scratch_, matmul_options_);
  if (c.arch == Arch::Gemma3) gemma3_cap_logits(logits, rows);
}

}  // namespace kvbench
