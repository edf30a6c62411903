// GELU in its tanh approximation, the feed-forward activation of Gemma
// (Hugging Face's gelu_pytorch_tanh, llama.cpp's GELU):
//   gelu(x) = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
#pragma once

#include <cmath>
#include <cstdint>

namespace kvbench {

inline float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCubic * x * x)));
}

// gate[i] = gelu_tanh(gate[i]) * up[i] for i < n (the gated feed-forward's
// product, GeGLU).
inline void geglu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = gelu_tanh(gate[i]) * up[i];
}

}  // namespace kvbench
