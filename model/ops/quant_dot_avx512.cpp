// AVX-512 (F/BW/DQ/VL + VNNI) kernels, chosen at run time like the AVX2 ones.
// Float operations follow the order defined in quant_dot_scalar.cpp exactly.
//
// Legacy blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) go through the interleaved
// kernels (quant_dot_interleaved_avx512.cpp). K-quant tiles (Q2_K, Q4_K, Q5_K,
// Q6_K) are in quant_dot_kquant_avx512.cpp; Q3_K keeps the AVX2 kernel. This
// file holds the F32 / F16 / BF16 products.
//
// The activation quantizers are the AVX2 ones (a 32-element block fills one
// 256-bit register; wider registers gain nothing there).
// a * b + c must not be fused behind our back: the order of float operations
// is the contract between the paths. (GCC in ISO mode does not fuse.)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "model/ops/quant_dot_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")

#include "model/ops/quant_dot_rows.h"
#include "model/ops/simd_avx512.h"

namespace kvbench::qdot {
namespace {

// hsum16 of quant_dot_scalar.cpp.
float hsum16(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// ---------------------------------------------------------------------------
// F32 / F16 / BF16 weights, f32 activations: the 16 reference lanes are one
// register; the tail is masked so untouched lanes keep their value.

__m512 load16_f32(const uint8_t* p) { return _mm512_loadu_ps(p); }
__m512 load16_f16(const uint8_t* p) { return _mm512_cvtph_ps(load256(p)); }
__m512 load16_bf16(const uint8_t* p) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load256(p)), 16));
}
__m512 mload16_f32(const uint8_t* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
__m512 mload16_f16(const uint8_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
__m512 mload16_bf16(const uint8_t* p, __mmask16 m) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

template <__m512 (*Load)(const uint8_t*), __m512 (*MLoad)(const uint8_t*, __mmask16), size_t kSize>
float plain_dot(const uint8_t* w, const uint8_t* a, int64_t n) {
  const auto* x = reinterpret_cast<const float*>(a);
  __m512 acc = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    acc = _mm512_fmadd_ps(Load(w + k * kSize), _mm512_loadu_ps(x + k), acc);
  if (k < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - k)) - 1);
    acc = _mm512_mask3_fmadd_ps(MLoad(w + k * kSize, m), _mm512_maskz_loadu_ps(m, x + k), acc, m);
  }
  return hsum16(acc);
}

}  // namespace
}  // namespace kvbench::qdot

KVBENCH_TARGET_END()

namespace kvbench::qdot {

// Built from function addresses only (no AVX-512 code runs here).
const Kernels* avx512_kernels() {
  static const Kernels k = [] {
    Kernels t = *avx2_kernels();  // the quantizers
    il::interleaved_avx512_kernels(t);
    t.tile[kQ2_K] = kquant_avx512_tile(kQ2_K);
    // Q3_K keeps the AVX2 kernel (t copied it): measured 4.2 vs 2.7 GB/s.
    t.tile[kQ4_K] = kquant_avx512_tile(kQ4_K);
    t.tile[kQ5_K] = kquant_avx512_tile(kQ5_K);
    t.tile[kQ6_K] = kquant_avx512_tile(kQ6_K);
    t.tile[kF32] = row_tile<plain_dot<load16_f32, mload16_f32, 4>>;
    t.tile[kF16] = row_tile<plain_dot<load16_f16, mload16_f16, 2>>;
    t.tile[kBF16] = row_tile<plain_dot<load16_bf16, mload16_bf16, 2>>;
    return t;
  }();
  return &k;
}

}  // namespace kvbench::qdot

#endif  // x86-64
