// Exact prefill's matrix product: many tokens times a tile of f32 weight rows
// (dequantized from the GGUF blocks), without a BLAS.
//
//   y[t * ldy + r] = sum_{c < k} W[r][c] * x[t * ldx + c]   r < n_rows, t < n_tokens
//
// Arithmetic (the contract every path meets bit for bit): one fused
// multiply-add chain per output, over c = 0, 1, ..., k - 1 in order, from
// +0 (exact_gemm_reference). An output therefore does not depend on the tile,
// the panel, the token group or the thread that computes it.
//
// The SIMD kernels read the rows packed into panels of kPanelRows rows,
// column-major inside a panel ([c][row]: one vector load gives 16 rows'
// element c), and broadcast each token's x[c]: the AVX-512 register tile of
// 12 tokens x 32 rows keeps 24 independent accumulator chains, two loads and
// twelve broadcasts per 24 FMAs (AVX2: 2 tokens x 32 rows).
#pragma once

#include <cstdint>

#include "model/ops/quant_dot.h"

namespace kvbench {

inline constexpr int64_t kPanelRows = 32;

// The reference: w is [n_rows][k] with rows ldw floats apart.
void exact_gemm_reference(const float* w, int64_t ldw, int64_t n_rows, const float* x, int64_t ldx,
                          int64_t n_tokens, int64_t k, float* y, int64_t ldy);

// Floats exact_gemm_pack writes for n_rows rows of k.
int64_t exact_gemm_panel_floats(int64_t n_rows, int64_t k);

// Packs rows [n_rows][k] (ldw apart) into panels: panel p holds rows
// [32p, 32p + 32) as [c][32]; rows past n_rows are zero.
void exact_gemm_pack(const float* w, int64_t ldw, int64_t n_rows, int64_t k, float* panels);

// The product from packed panels, on `path` (every path: the reference's bits).
void exact_gemm_panels(const float* panels, int64_t n_rows, const float* x, int64_t ldx,
                       int64_t n_tokens, int64_t k, float* y, int64_t ldy, CpuPath path);

namespace exact {
// Internal to exact_gemm*.cpp: a path's panel kernel (nullptr: not compiled
// in, simd_stubs.cpp).
using GemmPanelsFn = void (*)(const float* panels, int64_t n_rows, const float* x, int64_t ldx,
                              int64_t n_tokens, int64_t k, float* y, int64_t ldy);
GemmPanelsFn avx512_gemm_panels();
GemmPanelsFn avx2_gemm_panels();
}  // namespace exact

}  // namespace kvbench
