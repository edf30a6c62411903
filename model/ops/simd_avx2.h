// The vector basics of the AVX2 paths (8 floats, 4 doubles, 4 64-bit
// integers), on which the kernel templates' vector interfaces are built
// (attention_impl.h, silu_impl.h, exact_gemm_impl.h): each path's interface
// takes these and adds the operations of its own kernels. The byte loads
// load128 / load256 serve the integer kernels. simd_avx512.h is
// the same for AVX-512. Include inside a target region with AVX2 and FMA;
// internal linkage, so each file compiles its own copy.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace kvbench::simd {
namespace {

struct F32x8 {
  using V = __m256;
  using Half = __m128;
  static constexpr int W = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V load_aligned(const float* p) { return _mm256_load_ps(p); }
  static void store_aligned(float* p, V v) { _mm256_store_ps(p, v); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  // To the nearest integer, ties to even.
  static V round(V v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V xor_(V a, V b) { return _mm256_xor_ps(a, b); }
  static Half lo(V v) { return _mm256_castps256_ps128(v); }
  static Half hi(V v) { return _mm256_extractf128_ps(v, 1); }
  static V join(Half lo, Half hi) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
  }
};

struct I64x4 {
  using V = __m256i;
  static V set1(int64_t x) { return _mm256_set1_epi64x(x); }
  static V and_(V a, V b) { return _mm256_and_si256(a, b); }
  static V add(V a, V b) { return _mm256_add_epi64(a, b); }
  template <int kBits>
  static V shl(V v) {
    return _mm256_slli_epi64(v, kBits);
  }
};

struct F64x4 {
  using V = __m256d;
  static constexpr int W = 4;
  static V set1(double x) { return _mm256_set1_pd(x); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V fmsub(V a, V b, V c) { return _mm256_fmsub_pd(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  static V widen(F32x8::Half x) { return _mm256_cvtps_pd(x); }
  static F32x8::Half narrow(V v) { return _mm256_cvtpd_ps(v); }
  static I64x4::V bits(V v) { return _mm256_castpd_si256(v); }
  static V from_bits(I64x4::V v) { return _mm256_castsi256_pd(v); }
};

}  // namespace
}  // namespace kvbench::simd

namespace kvbench {
namespace {

// Unaligned loads of 16 and 32 bytes.
inline __m128i load128(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
inline __m256i load256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

}  // namespace
}  // namespace kvbench
