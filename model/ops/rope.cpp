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

namespace {

// One position's angles: pos * theta_i, then cos and sin in f32.
void angles(int64_t pos, const std::vector<float>& inv_freq, float* c, float* s) {
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const float angle = static_cast<float>(pos) * inv_freq[i];
    c[i] = std::cos(angle);
    s[i] = std::sin(angle);
  }
}

// One position's cosines then sines, [2][half], for the calls without a table
// (per thread: any head size the loaders accept, no allocation per call).
float* scratch(size_t half) {
  thread_local std::vector<float> buf;
  if (buf.size() < 2 * half) buf.resize(2 * half);
  return buf.data();
}

// A rotation at `pos` through one of the *_cs kernels, its angles computed
// for this call.
using RotateCs = void (*)(float*, int, int, const float*, const float*, int);
void rotate_at(RotateCs rotate, float* x, int n_vectors, int stride, int64_t pos,
               const std::vector<float>& inv_freq) {
  const int half = static_cast<int>(inv_freq.size());
  float* c = scratch(half);
  angles(pos, inv_freq, c, c + half);
  rotate(x, n_vectors, stride, c, c + half, half);
}

}  // namespace

void RopeTable::resize(int64_t n, const std::vector<float>& inv_freq) {
  half = static_cast<int>(inv_freq.size());
  const auto size = static_cast<size_t>(n * half);
  if (cos.size() < size) {
    cos.resize(size);
    sin.resize(size);
  }
}

void RopeTable::fill(std::span<const int32_t> positions, int64_t t0, int64_t t1,
                     const std::vector<float>& inv_freq) {
  assert(static_cast<int>(inv_freq.size()) == half);
  for (int64_t t = t0; t < t1; ++t) {
    float *c = cos.data() + t * half, *s = sin.data() + t * half;
    angles(positions[t], inv_freq, c, s);
    if (scale != 1.0f) {
      // ggml's rope_yarn: cos_theta = cosf(theta) * mscale (same for sin).
      for (int i = 0; i < half; ++i) {
        c[i] *= scale;
        s[i] *= scale;
      }
    }
  }
}

void rope_rotate_cs(float* x, int n_vectors, int stride, const float* c, const float* s, int half) {
  // Vector by vector, along each one (each element's arithmetic is the same
  // in any order; this one reads memory in sequence).
  for (int v = 0; v < n_vectors; ++v) {
    float* p = x + static_cast<int64_t>(v) * stride;
    for (int i = 0; i < half; ++i) {
      const float a = p[2 * i], b = p[2 * i + 1];
      p[2 * i] = a * c[i] - b * s[i];
      p[2 * i + 1] = a * s[i] + b * c[i];
    }
  }
}

void rope_rotate_neox_cs(float* x, int n_vectors, int stride, const float* c, const float* s,
                         int half) {
  for (int v = 0; v < n_vectors; ++v) {
    float* p = x + static_cast<int64_t>(v) * stride;
    for (int i = 0; i < half; ++i) {
      const float a = p[i], b = p[i + half];
      p[i] = a * c[i] - b * s[i];
      p[i + half] = a * s[i] + b * c[i];
    }
  }
}

void rope_rotate(float* x, int n_vectors, int stride, int64_t pos,
                 const std::vector<float>& inv_freq) {
  rotate_at(rope_rotate_cs, x, n_vectors, stride, pos, inv_freq);
}

void rope_rotate_neox(float* x, int n_vectors, int stride, int64_t pos,
                      const std::vector<float>& inv_freq) {
  rotate_at(rope_rotate_neox_cs, x, n_vectors, stride, pos, inv_freq);
}

}  // namespace kvbench
