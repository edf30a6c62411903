#include "tests/support/reference_gemma3.h"

#include <cmath>
#include <filesystem>

#include <unistd.h>

#include <gtest/gtest.h>

#include "model/testing/tiny_model.h"

namespace kvbench::test {
namespace {

std::vector<double> matvec(const std::vector<float>& w, int64_t rows, int64_t cols,
                           const double* x) {
  std::vector<double> y(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (int64_t c = 0; c < cols; ++c) s += static_cast<double>(w[r * cols + c]) * x[c];
    y[r] = s;
  }
  return y;
}

// x[0, n) normalised in place, times w (stored as 1 + w by the converter).
void rms_norm(double* x, int n, const std::vector<float>& w, double eps) {
  double ss = 0.0;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  const double scale = 1.0 / std::sqrt(ss / n + eps);
  for (int i = 0; i < n; ++i) x[i] = x[i] * scale * w[i];
}

// Rotate-half RoPE: element i turns with element i + d/2 by pos * base^(-2i/d).
void rope_halves(double* v, int d, int64_t pos, double base) {
  const int half = d / 2;
  for (int i = 0; i < half; ++i) {
    const double a = pos * std::pow(base, -2.0 * i / d), c = std::cos(a), s = std::sin(a);
    const double x0 = v[i], x1 = v[i + half];
    v[i] = x0 * c - x1 * s;
    v[i + half] = x0 * s + x1 * c;
  }
}

double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

}  // namespace

ReferenceGemma3::Matrix ReferenceGemma3::dequantize(const WeightMatrix& m) {
  Matrix out;
  out.rows = m.rows;
  out.cols = m.cols;
  out.w.resize(m.rows * m.cols);
  for (int64_t r = 0; r < m.rows; ++r)
    dequantize_row(m.type, m.row(r), out.w.data() + r * m.cols, m.cols);
  return out;
}

ReferenceGemma3::ReferenceGemma3(const LlamaModel& model) : c_(model.config()) {
  const LlamaWeights& w = model.weights();
  embd_ = dequantize(w.tok_embd);
  output_ = dequantize(w.output);
  output_norm_ = w.output_norm;
  for (const auto& L : w.layers) {
    layers_.push_back({L.attn_norm, L.q_norm, L.k_norm, L.attn_post_norm, L.ffn_norm,
                       L.ffn_post_norm, dequantize(L.wq), dequantize(L.wk), dequantize(L.wv),
                       dequantize(L.wo), dequantize(L.w_gate), dequantize(L.w_up),
                       dequantize(L.w_down)});
  }
}

std::vector<float> ReferenceGemma3::logits(const std::vector<int32_t>& tokens,
                                           const std::vector<int64_t>& score_at) const {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int hd = c_.head_dim, dim = c_.dim;
  const double eps = c_.rms_eps;
  std::vector<std::vector<double>> x(n, std::vector<double>(dim));
  for (int64_t t = 0; t < n; ++t)
    for (int i = 0; i < dim; ++i)
      x[t][i] = embd_.w[tokens[t] * int64_t{dim} + i] * std::sqrt(static_cast<double>(dim));

  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    const bool local = c_.local[l];
    const double base = local ? c_.rope_local.freq_base : c_.rope.freq_base;
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> xn = x[t];
      rms_norm(xn.data(), dim, L.attn_norm, eps);
      q[t] = matvec(L.wq.w, L.wq.rows, L.wq.cols, xn.data());
      k[t] = matvec(L.wk.w, L.wk.rows, L.wk.cols, xn.data());
      v[t] = matvec(L.wv.w, L.wv.rows, L.wv.cols, xn.data());
      for (int h = 0; h < c_.n_heads; ++h) {
        rms_norm(q[t].data() + h * hd, hd, L.q_norm, eps);
        rope_halves(q[t].data() + h * hd, hd, t, base);
      }
      for (int h = 0; h < c_.n_kv_heads; ++h) {
        rms_norm(k[t].data() + h * hd, hd, L.k_norm, eps);
        rope_halves(k[t].data() + h * hd, hd, t, base);
      }
    }
    for (int64_t t = 0; t < n; ++t) {
      // Local layers: keys at (t - window, t]; global: [0, t].
      const int64_t first =
          local && c_.sliding_window > 0 ? std::max<int64_t>(0, t - c_.sliding_window + 1) : 0;
      std::vector<double> attn(c_.q_dim(), 0.0);
      for (int h = 0; h < c_.n_heads; ++h) {
        const int kvh = h / c_.kv_mul();
        std::vector<double> s(t + 1 - first);
        double max = -1e300;
        for (int64_t j = first; j <= t; ++j) {
          double d = 0.0;
          for (int i = 0; i < hd; ++i) d += q[t][h * hd + i] * k[j][kvh * hd + i];
          s[j - first] = d * c_.attn_scale;
          max = std::max(max, s[j - first]);
        }
        double sum = 0.0;
        for (auto& e : s) sum += (e = std::exp(e - max));
        for (int64_t j = first; j <= t; ++j)
          for (int i = 0; i < hd; ++i) attn[h * hd + i] += s[j - first] / sum * v[j][kvh * hd + i];
      }
      auto o = matvec(L.wo.w, L.wo.rows, L.wo.cols, attn.data());
      rms_norm(o.data(), dim, L.attn_post_norm, eps);
      for (int i = 0; i < dim; ++i) x[t][i] += o[i];
      std::vector<double> xn = x[t];
      rms_norm(xn.data(), dim, L.ffn_norm, eps);
      auto gate = matvec(L.gate.w, L.gate.rows, L.gate.cols, xn.data());
      const auto up = matvec(L.up.w, L.up.rows, L.up.cols, xn.data());
      for (size_t i = 0; i < gate.size(); ++i) gate[i] = gelu_tanh(gate[i]) * up[i];
      auto d = matvec(L.down.w, L.down.rows, L.down.cols, gate.data());
      rms_norm(d.data(), dim, L.ffn_post_norm, eps);
      for (int i = 0; i < dim; ++i) x[t][i] += d[i];
    }
  }
  std::vector<float> out;
  out.reserve(score_at.size() * c_.n_vocab);
  for (int64_t t : score_at) {
    std::vector<double> xn = x[t];
    rms_norm(xn.data(), dim, output_norm_, eps);
    const auto l = matvec(output_.w, output_.rows, output_.cols, xn.data());
    const double cap = c_.final_logit_softcap;
    for (double e : l) out.push_back(static_cast<float>(cap > 0 ? cap * std::tanh(e / cap) : e));
  }
  return out;
}

std::string tiny_gemma3_path() {
  static std::string p;
  if (p.empty()) {
    p = testing::TempDir() + "kvbench-tiny-gemma3-" + std::to_string(::getpid()) + ".gguf";
    TinyModelOptions o;
    o.vocab = TinyVocabKind::Spm;
    o.gemma3 = true;
    write_tiny_model(p, o);
  }
  return p;
}

std::string gemma3_path() {
  const std::string p = std::string(KVBENCH_SOURCE_DIR) + "/models/gemma-3-270m-q4_k_m.gguf";
  return std::filesystem::exists(p) ? p : "";
}

}  // namespace kvbench::test
