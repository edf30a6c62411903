#include "model/evaluator.h"

#include <cassert>
#include <cmath>
#include <stdexcept>

#include "model/ops/rope.h"

namespace kvbench {
namespace {

// x[i] = cap * tanh(x[i] / cap) for i < n: squashes x into (-cap, cap).
void soft_cap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

}  // namespace

Evaluator::Evaluator(const LlamaModel& model, int n_threads, MatmulMode mode)
    : model_(model),
      pool_(n_threads),
      matmul_options_{mode, default_cpu_path()},
      inv_freq_(rope_inv_freq(model.config().rope)) {
  const LlamaConfig& c = model.config();
  if (c.has_local_layers()) inv_freq_local_ = rope_inv_freq(c.rope_local);
  rope_.scale = c.rope.attn_factor;
  rope_local_.scale = c.rope_local.attn_factor;
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

void Evaluator::add_bias_rows(float* rows, const std::vector<float>& bias, int64_t n) {
  const int64_t width = static_cast<int64_t>(bias.size());
  for_tokens(n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t)
      for (int64_t i = 0; i < width; ++i) rows[t * width + i] += bias[i];
  });
}

void Evaluator::embed(std::span<const int32_t> tokens, std::span<const int32_t> positions) {
  const LlamaConfig& c = model_.config();
  const LlamaWeights& w = model_.weights();
  const int64_t n = static_cast<int64_t>(tokens.size());
  ensure_capacity(n);

  // x[t] = token_embd[tokens[t]] * embed_scale   [n][dim]
  for (int64_t t = 0; t < n; ++t) {
    assert(tokens[t] >= 0 && tokens[t] < c.n_vocab);
    dequantize_row(w.tok_embd.type, w.tok_embd.row(tokens[t]), x_.data() + t * c.dim, c.dim);
  }
  if (c.embed_scale != 1.0f) {
    for (int64_t i = 0; i < n * c.dim; ++i) x_[i] *= c.embed_scale;
  }

  // The rotary angles' cosines and sines at this step's positions, once for
  // all layers (and once more at the local layers' angles).
  const bool local = !inv_freq_local_.empty();
  rope_.resize(n, inv_freq_);
  if (local) rope_local_.resize(n, inv_freq_local_);
  for_tokens(n, [&](int64_t t0, int64_t t1) {
    rope_.fill(positions, t0, t1, inv_freq_);
    if (local) rope_local_.fill(positions, t0, t1, inv_freq_local_);
  });
}

void Evaluator::output(int64_t first, int64_t rows, float* logits) {
  const LlamaConfig& c = model_.config();
  const LlamaWeights& w = model_.weights();
  rms_norm(x_.data() + first * c.dim, w.output_norm, xn_.data(), rows);
  matmul(w.output, xn_.data(), rows, logits, c.n_vocab, pool_, matmul_scratch_, matmul_options_);
  if (c.final_logit_softcap > 0.0f) soft_cap(logits, rows * c.n_vocab, c.final_logit_softcap);
}

void Evaluator::step(std::span<const int32_t> tokens, std::span<const int32_t> positions, int seq,
                     StepPhase phase, KvCache& cache, Logits which, float* logits) {
  assert(tokens.size() == positions.size() && !tokens.empty());
  const int64_t n = static_cast<int64_t>(tokens.size());
  embed(tokens, positions);

  StepInfo info;
  info.seq = seq;
  info.phase = phase;
  info.positions = positions;
  info.tokens = tokens;
  cache.begin_step(info);
  KvCache* const one[] = {&cache};
  for (int l = 0; l < model_.config().n_layers; ++l) block(l, positions, one);
  cache.end_step();

  if (which == Logits::None) return;
  // Only the rows whose logits are wanted go through the output layer.
  const int64_t first = which == Logits::Last ? n - 1 : 0;
  output(first, n - first, logits);
}

void Evaluator::step_batch(std::span<const BatchToken> rows, float* logits) {
  const int64_t n = static_cast<int64_t>(rows.size());
  if (n == 0) return;
  // [n] each: the rows' tokens, positions and caches; row t's StepInfo points
  // at its own element of tokens and positions.
  std::vector<int32_t> tokens(n), positions(n);
  std::vector<KvCache*> caches(n);
  for (int64_t t = 0; t < n; ++t) {
    tokens[t] = rows[t].token;
    positions[t] = rows[t].position;
    caches[t] = rows[t].cache;
    for (int64_t u = 0; u < t; ++u)
      if (caches[u] == caches[t])
        throw std::invalid_argument("step_batch: two rows share one cache");
  }
  embed(tokens, positions);
  // Each row's products as if alone (Exact mode's GEMM would mix the order).
  struct RowWise {
    MatmulOptions& o;
    bool saved;
    ~RowWise() { o.row_wise = saved; }
  } row_wise{matmul_options_, matmul_options_.row_wise};
  matmul_options_.row_wise = true;
  for (int64_t t = 0; t < n; ++t) {
    StepInfo info;
    info.seq = rows[t].seq;
    info.phase = StepPhase::Decode;
    info.positions = std::span(positions).subspan(t, 1);
    info.tokens = std::span(tokens).subspan(t, 1);
    caches[t]->begin_step(info);
  }
  for (int l = 0; l < model_.config().n_layers; ++l) block(l, positions, caches);
  for (KvCache* c : caches) c->end_step();
  output(0, n, logits);
}

}  // namespace kvbench
