// AVX-512 and AVX2 kernels of exact_gemm (model/ops/exact_gemm.h): register
// tiles of T tokens x 32 rows, one FMA chain per output over the columns in
// order, so every output has the reference's bits.
//
// Loop order: token groups outside, panels inside. A group's activations
// (T x k floats) stay in L1 while the tile's panels (96 rows: 3 x 32 x k
// floats) stream from L2; the panels were packed once per tile.
#include "model/ops/exact_gemm.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx512f,avx512vl,avx2,fma")

namespace kvbench::exact {
namespace {

// AVX-512: T tokens x 2 vectors of 16 rows. T = 12: 24 accumulators, the two
// panel vectors, and the broadcasts folded into the FMAs' memory operands;
// each panel load serves 12 FMAs instead of 8. SmolLM2's four Q4_1 shapes, 512
// tokens, one thread, Xeon, medians of 5 alternating rounds: 139.7-143.6
// GFLOP/s against 126.6-132.0 with T = 8; T = 14 was within the noise of 12.
template <int T>
void micro512(const float* panel, const float* x, int64_t ldx, int64_t k, float* y, int64_t ldy,
              int64_t nr) {
  __m512 acc[T][2];
  KVBENCH_UNROLL
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
  for (int64_t c = 0; c < k; ++c) {
    const __m512 w0 = _mm512_loadu_ps(panel + c * kPanelRows);
    const __m512 w1 = _mm512_loadu_ps(panel + c * kPanelRows + 16);
    KVBENCH_UNROLL
    for (int t = 0; t < T; ++t) {
      const __m512 xb = _mm512_set1_ps(x[t * ldx + c]);
      acc[t][0] = _mm512_fmadd_ps(w0, xb, acc[t][0]);
      acc[t][1] = _mm512_fmadd_ps(w1, xb, acc[t][1]);
    }
  }
  const auto lo = static_cast<__mmask16>(nr >= 16 ? 0xFFFFu : (1u << nr) - 1);
  const auto hi = static_cast<__mmask16>(nr >= 32 ? 0xFFFFu : nr <= 16 ? 0u : (1u << (nr - 16)) - 1);
  KVBENCH_UNROLL
  for (int t = 0; t < T; ++t) {
    _mm512_mask_storeu_ps(y + t * ldy, lo, acc[t][0]);
    _mm512_mask_storeu_ps(y + t * ldy + 16, hi, acc[t][1]);
  }
}

// AVX2: T tokens x 4 vectors of 8 rows (16 registers: 8 accumulators, 4
// panel vectors, a broadcast).
template <int T>
void micro256(const float* panel, const float* x, int64_t ldx, int64_t k, float* y, int64_t ldy,
              int64_t nr) {
  __m256 acc[T][4];
  KVBENCH_UNROLL
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < 4; ++v) acc[t][v] = _mm256_setzero_ps();
  for (int64_t c = 0; c < k; ++c) {
    __m256 w[4];
    KVBENCH_UNROLL
    for (int v = 0; v < 4; ++v) w[v] = _mm256_loadu_ps(panel + c * kPanelRows + 8 * v);
    KVBENCH_UNROLL
    for (int t = 0; t < T; ++t) {
      const __m256 xb = _mm256_broadcast_ss(x + t * ldx + c);
      KVBENCH_UNROLL
      for (int v = 0; v < 4; ++v) acc[t][v] = _mm256_fmadd_ps(w[v], xb, acc[t][v]);
    }
  }
  alignas(32) float tmp[kPanelRows];
  for (int t = 0; t < T; ++t) {
    for (int v = 0; v < 4; ++v) _mm256_store_ps(tmp + 8 * v, acc[t][v]);
    std::copy(tmp, tmp + nr, y + t * ldy);
  }
}

using MicroFn = void (*)(const float*, const float*, int64_t, int64_t, float*, int64_t, int64_t);

template <int T>
struct M512 {
  static constexpr MicroFn fn = micro512<T>;
};
template <int T>
struct M256 {
  static constexpr MicroFn fn = micro256<T>;
};

template <template <int> class M, int... I>
constexpr std::array<MicroFn, sizeof...(I)> micro_table(std::integer_sequence<int, I...>) {
  return {M<I + 1>::fn...};
}

template <int kT, template <int> class M>
void gemm_panels(const float* panels, int64_t n_rows, const float* x, int64_t ldx,
                 int64_t n_tokens, int64_t k, float* y, int64_t ldy) {
  // by_tokens[n - 1]: the micro-kernel of n tokens.
  static constexpr auto by_tokens = micro_table<M>(std::make_integer_sequence<int, kT>());
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kT) {
    const int64_t nt = std::min<int64_t>(kT, n_tokens - t0);
    for (int64_t r0 = 0; r0 < n_rows; r0 += kPanelRows)
      by_tokens[nt - 1](panels + r0 / kPanelRows * k * kPanelRows, x + t0 * ldx, ldx, k,
                        y + t0 * ldy + r0, ldy, std::min(kPanelRows, n_rows - r0));
  }
}

}  // namespace

GemmPanelsFn avx512_gemm_panels() { return gemm_panels<12, M512>; }
GemmPanelsFn avx2_gemm_panels() { return gemm_panels<2, M256>; }

}  // namespace kvbench::exact

KVBENCH_TARGET_END()

#else  // not x86-64

namespace kvbench::exact {
GemmPanelsFn avx512_gemm_panels() { return nullptr; }
GemmPanelsFn avx2_gemm_panels() { return nullptr; }
}  // namespace kvbench::exact

#endif
