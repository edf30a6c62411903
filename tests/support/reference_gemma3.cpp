#include "tests/support/reference_gemma3.h"

#include <cmath>
#include <filesystem>

#include <unistd.h>

#include <gtest/gtest.h>

#include "model/testing/tiny_model.h"

namespace kvbench::test {
namespace {

using reference::attend;
using reference::DenseMatrix;
using reference::rms_norm;
using reference::rms_normed;

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

ReferenceGemma3::ReferenceGemma3(const LlamaModel& model) : Forward(model) {
  for (const auto& L : model.weights().layers) {
    layers_.push_back({L.attn_norm, L.q_norm, L.k_norm, L.attn_post_norm, L.ffn_norm,
                       L.ffn_post_norm, DenseMatrix::of(L.wq), DenseMatrix::of(L.wk),
                       DenseMatrix::of(L.wv), DenseMatrix::of(L.wo), DenseMatrix::of(L.w_gate),
                       DenseMatrix::of(L.w_up), DenseMatrix::of(L.w_down)});
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
      const auto xn = rms_normed(x[t], L.attn_norm, eps);
      q[t] = L.wq.times(xn.data());
      k[t] = L.wk.times(xn.data());
      v[t] = L.wv.times(xn.data());
      for (int h = 0; h < c_.n_heads; ++h) {
        if (c_.norms.qk) rms_norm(q[t].data() + h * hd, hd, L.q_norm, eps);  // not Gemma 2
        rope_halves(q[t].data() + h * hd, hd, t, base);
      }
      for (int h = 0; h < c_.n_kv_heads; ++h) {
        if (c_.norms.qk) rms_norm(k[t].data() + h * hd, hd, L.k_norm, eps);
        rope_halves(k[t].data() + h * hd, hd, t, base);
      }
    }
    for (int64_t t = 0; t < n; ++t) {
      // Local layers: keys at (t - window, t]; global: [0, t].
      const int64_t first =
          local && c_.sliding_window > 0 ? std::max<int64_t>(0, t - c_.sliding_window + 1) : 0;
      const auto attn = attend(c_, q, k, v, t, first, c_.attn_scale);
      auto o = L.wo.times(attn.data());
      rms_norm(o.data(), dim, L.attn_post_norm, eps);
      for (int i = 0; i < dim; ++i) x[t][i] += o[i];
      const auto xn = rms_normed(x[t], L.ffn_norm, eps);
      auto gate = L.gate.times(xn.data());
      const auto up = L.up.times(xn.data());
      for (size_t i = 0; i < gate.size(); ++i) gate[i] = gelu_tanh(gate[i]) * up[i];
      auto d = L.down.times(gate.data());
      rms_norm(d.data(), dim, L.ffn_post_norm, eps);
      for (int i = 0; i < dim; ++i) x[t][i] += d[i];
    }
  }
  std::vector<float> out;
  out.reserve(score_at.size() * c_.n_vocab);
  for (int64_t t : score_at) {
    const auto xn = rms_normed(x[t], output_norm_, eps);
    const auto l = output_.times(xn.data());
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
    o.arch = TinyArch::Gemma3;
    write_tiny_model(p, o);
  }
  return p;
}

std::string gemma3_path() {
  const std::string p = std::string(KVBENCH_SOURCE_DIR) + "/models/gemma-3-270m-q4_k_m.gguf";
  return std::filesystem::exists(p) ? p : "";
}

}  // namespace kvbench::test
