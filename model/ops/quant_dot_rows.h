// Internal to quant_dot_scalar.cpp, quant_dot_avx2.cpp and
// quant_dot_avx512.cpp: a tile as one dot product per (weight row,
// activation row) pair, for the kernels without a register tile of their
// own. The SIMD files include it inside their target region, so row_tile
// compiles with the path's instructions and inlines its Dot; internal
// linkage keeps each path's instantiations in its own object file.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvbench::qdot {
namespace {

// One weight row (GGUF layout) times one activation row of n elements.
using DotFn = float (*)(const uint8_t* w, const uint8_t* act, int64_t n);

// out[t * ldo + r] = Dot(weight row r, activation row t); see quant_dot_tile().
template <DotFn Dot>
void row_tile(const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* act,
              size_t act_stride, int64_t n_act, int64_t n, float* out, int64_t ldo) {
  for (int64_t t = 0; t < n_act; ++t)
    for (int64_t r = 0; r < n_rows; ++r)
      out[t * ldo + r] = Dot(w + r * w_stride, act + t * act_stride, n);
}

}  // namespace
}  // namespace kvbench::qdot
