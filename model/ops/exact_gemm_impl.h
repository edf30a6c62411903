// The register tiles of exact_gemm (model/ops/exact_gemm.h), written once over
// a small vector interface and instantiated by exact_gemm_avx2.cpp and
// exact_gemm_avx512.cpp inside their target regions: T tokens x 32 rows, one
// FMA chain per output over the columns in order, so every output has the
// reference's bits. Everything here has internal linkage, so each path's
// instantiations stay in its own object file.
//
// Loop order: token groups outside, panels inside. A group's activations
// (T x k floats) stay in L1 while the tile's panels (96 rows: 3 x 32 x k
// floats) stream from L2; the panels were packed once per tile.
//
// The vector interface `I`:
//   the path's float basics (simd_avx2.h, simd_avx512.h): V, W floats, zero(),
//     load(const float*), set1(float), fmadd(a, b, c) = a * b + c
//   kTokens: the widest tile's T (its accumulators, the panel row's
//     kPanelRows / W vectors and a broadcast fill the registers)
//   store<T>(y, ldy, acc[T][kPanelRows / W], nr): y[t * ldy + r] = row r of
//     acc[t] for r < nr
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "model/ops/exact_gemm.h"
#include "model/ops/simd_target.h"

namespace kvbench::exact {
namespace {

// T tokens x kPanelRows rows of one panel over k columns; y[t * ldy + r] for
// the first nr rows.
template <class I, int T>
void micro(const float* panel, const float* x, int64_t ldx, int64_t k, float* y, int64_t ldy,
           int64_t nr) {
  constexpr int kVecs = kPanelRows / I::W;
  typename I::V acc[T][kVecs];
  KVBENCH_UNROLL
  for (int t = 0; t < T; ++t) {
    KVBENCH_UNROLL
    for (int v = 0; v < kVecs; ++v) acc[t][v] = I::zero();
  }
  for (int64_t c = 0; c < k; ++c) {
    typename I::V w[kVecs];
    KVBENCH_UNROLL
    for (int v = 0; v < kVecs; ++v) w[v] = I::load(panel + c * kPanelRows + I::W * v);
    KVBENCH_UNROLL
    for (int t = 0; t < T; ++t) {
      const typename I::V xb = I::set1(x[t * ldx + c]);
      KVBENCH_UNROLL
      for (int v = 0; v < kVecs; ++v) acc[t][v] = I::fmadd(w[v], xb, acc[t][v]);
    }
  }
  I::template store<T>(y, ldy, acc, nr);
}

using MicroFn = void (*)(const float*, const float*, int64_t, int64_t, float*, int64_t, int64_t);

template <class I, int... kT>
constexpr std::array<MicroFn, sizeof...(kT)> micro_table(std::integer_sequence<int, kT...>) {
  return {micro<I, kT + 1>...};
}

template <class I>
void gemm_panels(const float* panels, int64_t n_rows, const float* x, int64_t ldx, int64_t n_tokens,
                 int64_t k, float* y, int64_t ldy) {
  constexpr int kT = I::kTokens;
  // by_tokens[n - 1]: the micro-kernel of n tokens.
  static constexpr auto by_tokens = micro_table<I>(std::make_integer_sequence<int, kT>());
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kT) {
    const int64_t nt = std::min<int64_t>(kT, n_tokens - t0);
    for (int64_t r0 = 0; r0 < n_rows; r0 += kPanelRows)
      by_tokens[nt - 1](panels + r0 / kPanelRows * k * kPanelRows, x + t0 * ldx, ldx, k,
                        y + t0 * ldy + r0, ldy, std::min(kPanelRows, n_rows - r0));
  }
}

}  // namespace
}  // namespace kvbench::exact
