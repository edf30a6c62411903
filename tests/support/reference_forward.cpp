#include "tests/support/reference_forward.h"

#include <algorithm>
#include <cmath>

#include "model/gguf/ggml_types.h"

namespace kvbench::test::reference {

DenseMatrix DenseMatrix::of(const WeightMatrix& m) {
  DenseMatrix out;
  out.rows = m.rows;
  out.cols = m.cols;
  out.w.resize(m.rows * m.cols);
  for (int64_t r = 0; r < m.rows; ++r)
    dequantize_row(m.type, m.row(r), out.w.data() + r * m.cols, m.cols);
  return out;
}

std::vector<double> DenseMatrix::times(const double* x) const {
  std::vector<double> y(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (int64_t c = 0; c < cols; ++c) s += static_cast<double>(w[r * cols + c]) * x[c];
    y[r] = s;
  }
  return y;
}

void rms_norm(double* x, int n, const std::vector<float>& w, double eps) {
  double ss = 0.0;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  const double scale = 1.0 / std::sqrt(ss / n + eps);
  for (int i = 0; i < n; ++i) x[i] = x[i] * scale * w[i];
}

std::vector<double> rms_normed(std::vector<double> x, const std::vector<float>& w, double eps) {
  rms_norm(x.data(), static_cast<int>(x.size()), w, eps);
  return x;
}

std::vector<double> attend(const LlamaConfig& c, const std::vector<std::vector<double>>& q,
                           const std::vector<std::vector<double>>& k,
                           const std::vector<std::vector<double>>& v, int64_t t, int64_t first,
                           double scale) {
  const int hd = c.head_dim;
  std::vector<double> attn(c.q_dim(), 0.0);
  for (int h = 0; h < c.n_heads; ++h) {
    const int kvh = h / c.kv_mul();
    std::vector<double> s(t + 1 - first);
    double max = -1e300;
    for (int64_t j = first; j <= t; ++j) {
      double d = 0.0;
      for (int i = 0; i < hd; ++i) d += q[t][h * hd + i] * k[j][kvh * hd + i];
      s[j - first] = d * scale;
      // Gemma 2's attention soft-capping (0 elsewhere).
      if (c.attn_logit_softcap > 0)
        s[j - first] = c.attn_logit_softcap * std::tanh(s[j - first] / c.attn_logit_softcap);
      max = std::max(max, s[j - first]);
    }
    double sum = 0.0;
    for (auto& e : s) sum += (e = std::exp(e - max));
    for (int64_t j = first; j <= t; ++j)
      for (int i = 0; i < hd; ++i) attn[h * hd + i] += s[j - first] / sum * v[j][kvh * hd + i];
  }
  return attn;
}

Forward::Forward(const LlamaModel& model)
    : c_(model.config()),
      embd_(DenseMatrix::of(model.weights().tok_embd)),
      output_(DenseMatrix::of(model.weights().output)),
      output_norm_(model.weights().output_norm) {}

}  // namespace kvbench::test::reference
