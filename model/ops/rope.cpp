#include "model/ops/rope.h"

#include <cassert>
#include <cmath>

namespace kvbench {

std::vector<float> rope_inv_freq(const RopeConfig& rope) {
  assert(rope.n_dims > 0 && rope.n_dims % 2 == 0);
  const int half = rope.n_dims / 2;
  std::vector<float> inv(half);
  for (int i = 0; i < half; ++i) {
    // Computed in double and rounded once, like ggml's theta_scale powers,
    // so that angles at large positions stay accurate.
    double theta =
        std::pow(static_cast<double>(rope.freq_base), -2.0 * i / static_cast<double>(rope.n_dims));
    theta *= rope.freq_scale;
    if (!rope.freq_factors.empty()) theta /= rope.freq_factors[i];
    inv[i] = static_cast<float>(theta);
  }
  return inv;
}

void rope_rotate(float* x, int n_vectors, int stride, int64_t pos,
                 const std::vector<float>& inv_freq) {
  const int half = static_cast<int>(inv_freq.size());
  for (int i = 0; i < half; ++i) {
    const float angle = static_cast<float>(pos) * inv_freq[i];
    const float c = std::cos(angle), s = std::sin(angle);
    for (int v = 0; v < n_vectors; ++v) {
      float* p = x + static_cast<int64_t>(v) * stride + 2 * i;
      const float a = p[0], b = p[1];
      p[0] = a * c - b * s;
      p[1] = a * s + b * c;
    }
  }
}

void rope_rotate_neox(float* x, int n_vectors, int stride, int64_t pos,
                      const std::vector<float>& inv_freq) {
  const int half = static_cast<int>(inv_freq.size());
  for (int i = 0; i < half; ++i) {
    const float angle = static_cast<float>(pos) * inv_freq[i];
    const float c = std::cos(angle), s = std::sin(angle);
    for (int v = 0; v < n_vectors; ++v) {
      float* p = x + static_cast<int64_t>(v) * stride;
      const float a = p[i], b = p[i + half];
      p[i] = a * c - b * s;
      p[i + half] = a * s + b * c;
    }
  }
}

}  // namespace kvbench
