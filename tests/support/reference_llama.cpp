#include "tests/support/reference_llama.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <unistd.h>

#include <gtest/gtest.h>

#include "model/testing/tiny_model.h"

namespace kvbench::test {
namespace {

// y[r] = sum_c W[r][c] x[c], in double.
std::vector<double> matvec(const std::vector<float>& w, int64_t rows, int64_t cols,
                           const std::vector<double>& x) {
  std::vector<double> y(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (int64_t c = 0; c < cols; ++c) s += static_cast<double>(w[r * cols + c]) * x[c];
    y[r] = s;
  }
  return y;
}

std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<float>& w,
                             double eps) {
  double ss = 0.0;
  for (double v : x) ss += v * v;
  const double scale = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * w[i];
  return y;
}

// Adjacent-pair rotation of one head vector at position pos.
void rope(double* v, int n_dims, int64_t pos, const RopeConfig& r) {
  for (int i = 0; i < n_dims / 2; ++i) {
    double theta = std::pow(static_cast<double>(r.freq_base), -2.0 * i / n_dims) * r.freq_scale;
    if (!r.freq_factors.empty()) theta /= r.freq_factors[i];
    const double a = pos * theta, c = std::cos(a), s = std::sin(a);
    const double x0 = v[2 * i], x1 = v[2 * i + 1];
    v[2 * i] = x0 * c - x1 * s;
    v[2 * i + 1] = x0 * s + x1 * c;
  }
}

}  // namespace

ReferenceLlama::Matrix ReferenceLlama::dequantize(const WeightMatrix& m) {
  Matrix out;
  out.rows = m.rows;
  out.cols = m.cols;
  out.w.resize(m.rows * m.cols);
  for (int64_t r = 0; r < m.rows; ++r)
    dequantize_row(m.type, m.row(r), out.w.data() + r * m.cols, m.cols);
  return out;
}

ReferenceLlama::ReferenceLlama(const LlamaModel& model) : c_(model.config()) {
  const LlamaWeights& w = model.weights();
  embd_ = dequantize(w.tok_embd);
  output_ = dequantize(w.output);
  output_norm_ = w.output_norm;
  for (const auto& L : w.layers) {
    layers_.push_back({L.attn_norm, L.ffn_norm, dequantize(L.wq), dequantize(L.wk),
                       dequantize(L.wv), dequantize(L.wo), dequantize(L.w_gate), dequantize(L.w_up),
                       dequantize(L.w_down)});
  }
}

std::vector<float> ReferenceLlama::logits(const std::vector<int32_t>& tokens,
                                          const std::vector<int64_t>& score_at) const {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int hd = c_.head_dim;
  // Residual stream for every position: x[t][dim].
  std::vector<std::vector<double>> x(n, std::vector<double>(c_.dim));
  for (int64_t t = 0; t < n; ++t)
    for (int i = 0; i < c_.dim; ++i) x[t][i] = embd_.w[tokens[t] * int64_t{c_.dim} + i];

  for (const Layer& L : layers_) {
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (int64_t t = 0; t < n; ++t) {
      const auto xn = rms_norm(x[t], L.attn_norm, c_.rms_eps);
      q[t] = matvec(L.wq.w, L.wq.rows, L.wq.cols, xn);
      k[t] = matvec(L.wk.w, L.wk.rows, L.wk.cols, xn);
      v[t] = matvec(L.wv.w, L.wv.rows, L.wv.cols, xn);
      for (int h = 0; h < c_.n_heads; ++h) rope(q[t].data() + h * hd, c_.rope.n_dims, t, c_.rope);
      for (int h = 0; h < c_.n_kv_heads; ++h)
        rope(k[t].data() + h * hd, c_.rope.n_dims, t, c_.rope);
    }
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> attn(c_.q_dim(), 0.0);
      for (int h = 0; h < c_.n_heads; ++h) {
        const int kvh = h / c_.kv_mul();
        std::vector<double> s(t + 1);
        double max = -1e300;
        for (int64_t j = 0; j <= t; ++j) {
          double d = 0.0;
          for (int i = 0; i < hd; ++i) d += q[t][h * hd + i] * k[j][kvh * hd + i];
          s[j] = d / std::sqrt(static_cast<double>(hd));
          max = std::max(max, s[j]);
        }
        double sum = 0.0;
        for (auto& e : s) sum += (e = std::exp(e - max));
        for (int64_t j = 0; j <= t; ++j)
          for (int i = 0; i < hd; ++i) attn[h * hd + i] += s[j] / sum * v[j][kvh * hd + i];
      }
      const auto o = matvec(L.wo.w, L.wo.rows, L.wo.cols, attn);
      for (int i = 0; i < c_.dim; ++i) x[t][i] += o[i];
      const auto xn = rms_norm(x[t], L.ffn_norm, c_.rms_eps);
      auto g = matvec(L.gate.w, L.gate.rows, L.gate.cols, xn);
      const auto u = matvec(L.up.w, L.up.rows, L.up.cols, xn);
      for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      const auto d = matvec(L.down.w, L.down.rows, L.down.cols, g);
      for (int i = 0; i < c_.dim; ++i) x[t][i] += d[i];
    }
  }
  std::vector<float> out;
  out.reserve(score_at.size() * c_.n_vocab);
  for (int64_t t : score_at) {
    const auto xn = rms_norm(x[t], output_norm_, c_.rms_eps);
    const auto l = matvec(output_.w, output_.rows, output_.cols, xn);
    for (double e : l) out.push_back(static_cast<float>(e));
  }
  return out;
}

std::string tiny_model_path(bool spm, bool tied) {
  static std::map<std::pair<bool, bool>, std::string> paths;
  auto& p = paths[{spm, tied}];
  if (p.empty()) {
    p = testing::TempDir() + "kvbench-tiny-" + (spm ? "spm" : "bpe") + (tied ? "" : "-untied") +
        "-" + std::to_string(::getpid()) + ".gguf";
    TinyModelOptions o;
    o.vocab = spm ? TinyVocabKind::Spm : TinyVocabKind::Bpe;
    o.tied_output = tied;
    write_tiny_model(p, o);
  }
  return p;
}

std::string smollm2_path() {
  if (const char* env = std::getenv("KVBENCH_MODEL"); env && *env) return env;
  const std::string p = std::string(KVBENCH_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  return std::filesystem::exists(p) ? p : "";
}

std::vector<int32_t> some_tokens(int n, int n_vocab, uint32_t seed) {
  std::vector<int32_t> t(n);
  uint32_t s = seed;
  for (auto& x : t) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<int32_t>((s >> 8) % n_vocab);
  }
  return t;
}

float max_abs_diff(const float* a, const float* b, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

std::vector<CpuPath> supported_paths() {
  std::vector<CpuPath> paths;
  for (CpuPath p : {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512})
    if (cpu_path_supported(p)) paths.push_back(p);
  return paths;
}

}  // namespace kvbench::test
