// AVX2 kernels of the exact path (model/ops/exact_dot.h): the portable fallback
// for machines without AVX-512. Weights are decoded by the scalar
// dequantize_row() into a buffer of one row; the dot product keeps the
// reference's 16 lanes in two 8-lane registers (lanes 0..7, 8..15).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "model/ops/exact_dot.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace kvbench::exact {
namespace {

// 8-lane mask of the first `count` lanes (count may be <= 0 or >= 8).
__m256i first_lanes(int64_t count) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(count, 8))),
                            index);
}

float dot(const float* w, const float* x, int64_t n) {
  __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a);
    b = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), b);
  }
  if (i < n) {  // lanes past the row keep their sums: blend instead of adding 0 * 0
    const __m256i m0 = first_lanes(n - i), m1 = first_lanes(n - i - 8);
    const __m256 fa =
        _mm256_fmadd_ps(_mm256_maskload_ps(w + i, m0), _mm256_maskload_ps(x + i, m0), a);
    const __m256 fb =
        _mm256_fmadd_ps(_mm256_maskload_ps(w + i + 8, m1), _mm256_maskload_ps(x + i + 8, m1), b);
    a = _mm256_blendv_ps(a, fa, _mm256_castsi256_ps(m0));
    b = _mm256_blendv_ps(b, fb, _mm256_castsi256_ps(m1));
  }
  const __m256 h8 = _mm256_add_ps(a, b);
  const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
  const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
  return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

void tile(GgmlType type, const uint8_t* w, size_t w_stride, int64_t n_rows, const float* x,
          int64_t ldx, int64_t n_x, int64_t n, float* out, int64_t ldo) {
  tile_by_rows(type, w, w_stride, n_rows, x, ldx, n_x, n, out, ldo, dot);
}

}  // namespace
}  // namespace kvbench::exact

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

namespace kvbench::exact {
const Kernels* avx2_kernels() {
  static const Kernels k{nullptr, tile};  // dequantize: the scalar one
  return &k;
}
}  // namespace kvbench::exact

#else  // not x86-64

namespace kvbench::exact {
const Kernels* avx2_kernels() { return nullptr; }
}  // namespace kvbench::exact

#endif
