// What the naive reference forwards (reference_llama, reference_gemma3) have
// in common: weights fully dequantized, every sum in double, causal softmax
// attention spelled out. Independent of the model's own kernels, which the
// references are there to check.
#pragma once

#include <cstdint>
#include <vector>

#include "model/llama_model.h"

namespace kvbench::test::reference {

// A weight matrix dequantized to float, w[rows][cols].
struct DenseMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> w;

  static DenseMatrix of(const WeightMatrix& m);
  // y[r] = sum_c w[r][c] x[c], in double.
  std::vector<double> times(const double* x) const;
};

// x[0, n) normalised in place, times w.
void rms_norm(double* x, int n, const std::vector<float>& w, double eps);
// A copy of x, normalised and times w.
std::vector<double> rms_normed(std::vector<double> x, const std::vector<float>& w, double eps);

// Position t's attention output [q_dim]: each query head (q[t]) over the
// keys and values of its KV head at positions [first, t], scores q . k *
// scale through a softmax.
std::vector<double> attend(const LlamaConfig& c, const std::vector<std::vector<double>>& q,
                           const std::vector<std::vector<double>>& k,
                           const std::vector<std::vector<double>>& v, int64_t t, int64_t first,
                           double scale);

// A naive forward over a model's weights, dequantized once: the embedding,
// output matrix and output norm here, each architecture's layers in the
// class derived from this one.
class Forward {
 public:
  virtual ~Forward() = default;
  // Logits [n_vocab] after each of the positions listed in `score_at` (indices
  // into tokens; positions are 0..n-1), concatenated in that order.
  virtual std::vector<float> logits(const std::vector<int32_t>& tokens,
                                    const std::vector<int64_t>& score_at) const = 0;

 protected:
  explicit Forward(const LlamaModel& model);

  const LlamaConfig& c_;
  DenseMatrix embd_, output_;
  std::vector<float> output_norm_;
};

}  // namespace kvbench::test::reference
