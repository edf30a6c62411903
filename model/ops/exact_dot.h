// The exact path's products: weights dequantized to f32 and multiplied with
// f32 activations, in one pass and without an f32 copy of the weights.
//
// Arithmetic (the contract every path meets bit for bit):
//  - a weight row is exactly what dequantize_row() gives (same float steps;
//    the SIMD decoders perform them on 16 lanes at once);
//  - dot(w, x) over n elements accumulates element i into lane i % 16 with a
//    fused multiply-add, in increasing i, starting from +0; then lanes are
//    folded l + 8, l + 4, l + 2, l + 1 (exact_dot_reference below).
// Decode (one token) is a matrix-vector product bound by how fast weights are
// decoded: the AVX-512 kernel decodes 32 elements of four rows at a time, so
// four accumulator chains hide the FMA latency.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "model/gguf/ggml_types.h"
#include "model/ops/quant_dot.h"

namespace kvbench {

// The reference dot product of the exact path (scalar, std::fma).
float exact_dot_reference(const float* w, const float* x, int64_t n);

// dequantize_row() with the path's decoders: bit-identical output.
void dequantize_row_fast(GgmlType type, const void* src, float* dst, int64_t n, CpuPath path);

// out[t * ldo + r] = exact_dot_reference(dequantize_row(row r), x + t * ldx)
// for r < n_rows, t < n_x. Rows (GGUF layout, n elements each) are w_stride
// bytes apart. Bit-identical on every path and whatever the tile shape.
void exact_dot_tile(GgmlType type, const void* w, size_t w_stride, int64_t n_rows, const float* x,
                    int64_t ldx, int64_t n_x, int64_t n, float* out, int64_t ldo, CpuPath path);

// Whether `path` reads planar rows of `type` directly (else
// exact_dot_tile_planar converts each row back first: use the GGUF rows).
bool has_exact_planar_kernel(GgmlType type, CpuPath path);

// exact_dot_tile on planar rows (model/ops/planar.h) of a type with a planar
// layout: the same bits as on the GGUF rows.
void exact_dot_tile_planar(GgmlType type, const void* w, size_t w_stride, int64_t n_rows,
                           const float* x, int64_t ldx, int64_t n_x, int64_t n, float* out,
                           int64_t ldo, CpuPath path);

namespace exact {
// How far ahead decode prefetches weight rows, and into L2 (locality 2,
// prefetcht1), not L1: a thread streaming from memory needs more misses in
// flight than L1 tracks. Measured on SmolLM2's output matrix (49152 x 576
// Q8_0, 30 MB, one thread, AVX-512): 8 rows into L1 5.2-5.4 ms, 32 rows into
// L2 2.2-2.3 ms; 64 rows no better.
inline constexpr int64_t kPrefetchRows = 32;

// Called before rows [r, r + count) of n_rows (w_stride bytes apart) are
// read: prefetches the rows kPrefetchRows further on.
inline void prefetch_rows_ahead(const uint8_t* w, size_t w_stride, int64_t n_rows, int64_t r,
                                int64_t count) {
  const int64_t first = r + kPrefetchRows;
  if (first >= n_rows) return;
  const int64_t bytes = std::min(n_rows - first, count) * static_cast<int64_t>(w_stride);
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(w + first * w_stride + b, 0, 2);
}

// Internal to exact_dot*.cpp: each instruction-set path's entry points
// (nullptr when the path is not compiled in: simd_stubs.cpp).
struct Kernels {
  void (*dequantize)(GgmlType type, const uint8_t* src, float* dst, int64_t n) = nullptr;
  void (*tile)(GgmlType type, const uint8_t* w, size_t w_stride, int64_t n_rows, const float* x,
               int64_t ldx, int64_t n_x, int64_t n, float* out, int64_t ldo) = nullptr;
  decltype(tile) planar_tile = nullptr;  // planar rows; nullptr: convert them back first
};
const Kernels* avx2_kernels();
const Kernels* avx512_kernels();

// The tile of the paths without their own decoders: each row through the
// scalar dequantize_row() into a per-thread buffer, then `dot` with each
// token (exact_dot_reference, or a SIMD version with its order).
using DotFn = float (*)(const float* w, const float* x, int64_t n);
void tile_by_rows(GgmlType type, const uint8_t* w, size_t w_stride, int64_t n_rows, const float* x,
                  int64_t ldx, int64_t n_x, int64_t n, float* out, int64_t ldo, DotFn dot);
}  // namespace exact

}  // namespace kvbench
