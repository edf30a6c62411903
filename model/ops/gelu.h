// GELU in its tanh approximation, the feed-forward activation of Gemma
// (Hugging Face's gelu_pytorch_tanh, llama.cpp's GELU):
//   gelu(x) = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
//
// gelu_tanh() is the reference (std::tanh). geglu() runs gelu_tanh_fast(),
// the same function written as x * sigmoid(2u) = x / (1 + exp(-2u)) with an
// exp made of plain float operations: no library call and no branch, so the
// compiler vectorizes the loop, and every CPU path computes the same bits.
// (The scalar std::tanh was 10% of a Gemma 3 prefill.) The two agree to a few
// ulp; tests/test_gemma3.cpp holds the bound. llama.cpp itself reads GELU
// from a table indexed by the f16-rounded input, far coarser than either.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "model/ops/quant_dot.h"  // CpuPath

namespace kvbench {

inline float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCubic * x * x)));
}

// The constants of exp_bounded() and gelu_tanh_fast(), shared with the
// AVX-512 geglu (gelu.cpp), which must compute the same bits.
namespace gelu_const {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;
constexpr float kExpLo = -87.0f, kExpHi = 88.0f;
constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                         4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
}  // namespace gelu_const

// exp(y) for every float y, within 2 ulp on [-87, 88] (y outside is clamped
// there: exp(-87) ~ 1.6e-38 and exp(88) ~ 1.7e38, both finite normals).
// Cephes' expf: y = n ln2 + r with |r| <= ln2 / 2, a degree-6 polynomial for
// exp(r), and 2^n built in the exponent bits.
inline float exp_bounded(float y) {
  using namespace gelu_const;
  y = std::min(std::max(y, kExpLo), kExpHi);
  // Adding 1.5 * 2^23 rounds y / ln2 to an integer held in the low mantissa
  // bits, without a rounding instruction the baseline x86-64 lacks.
  const float t = y * kLog2e + kRound;
  const float n = t - kRound;
  float r = y - n * kLn2Hi;  // ln2 split in two: the high part is exact in n * hi
  r = r - n * kLn2Lo;
  float p = kP[0];
  p = p * r + kP[1];
  p = p * r + kP[2];
  p = p * r + kP[3];
  p = p * r + kP[4];
  p = p * r + kP[5];
  p = p * (r * r) + r + 1.0f;
  // n is in [-126, 127]: 2^n is a normal float, (n + 127) << 23 its bits.
  const int32_t e = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(kRound) + 127;
  return p * std::bit_cast<float>(e << 23);
}

inline float gelu_tanh_fast(float x) {
  using namespace gelu_const;
  const float u = kSqrt2OverPi * x * (1.0f + kCubic * x * x);
  return x / (1.0f + exp_bounded(-2.0f * u));
}

// gate[i] = gelu_tanh_fast(gate[i]) * up[i] for i < n (the gated
// feed-forward's product, GeGLU). `path` Avx512 runs 16 lanes with the same
// operations in the same order (gelu.cpp), so every path gives the same bits.
void geglu(float* gate, const float* up, int64_t n, CpuPath path = CpuPath::Scalar);

}  // namespace kvbench
