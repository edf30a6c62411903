// The vector basics of the AVX-512 paths (16 floats, 8 doubles, 8 64-bit
// integers): what simd_avx2.h is for AVX2, on which the kernel templates'
// vector interfaces are built. Include inside a target region with AVX-512 F
// (F32x16's xor_ and halves also need DQ); internal linkage, so each file
// compiles its own copy.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "model/ops/simd_avx2.h"  // the AVX-512 regions include AVX2

namespace kvbench::simd {
namespace {

struct F32x16 {
  using V = __m512;
  using Half = __m256;
  static constexpr int W = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V load_aligned(const float* p) { return _mm512_load_ps(p); }
  static void store_aligned(float* p, V v) { _mm512_store_ps(p, v); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  // To the nearest integer, ties to even.
  static V round(V v) {
    return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static V xor_(V a, V b) { return _mm512_xor_ps(a, b); }
  static Half lo(V v) { return _mm512_castps512_ps256(v); }
  static Half hi(V v) { return _mm512_extractf32x8_ps(v, 1); }
  static V join(Half lo, Half hi) { return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1); }
};

struct I64x8 {
  using V = __m512i;
  static V set1(int64_t x) { return _mm512_set1_epi64(x); }
  static V and_(V a, V b) { return _mm512_and_si512(a, b); }
  static V add(V a, V b) { return _mm512_add_epi64(a, b); }
  template <int kBits>
  static V shl(V v) {
    return _mm512_slli_epi64(v, kBits);
  }
};

struct F64x8 {
  using V = __m512d;
  static constexpr int W = 8;
  static V set1(double x) { return _mm512_set1_pd(x); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V fmsub(V a, V b, V c) { return _mm512_fmsub_pd(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V sub(V a, V b) { return _mm512_sub_pd(a, b); }
  static V widen(F32x16::Half x) { return _mm512_cvtps_pd(x); }
  static F32x16::Half narrow(V v) { return _mm512_cvtpd_ps(v); }
  static I64x8::V bits(V v) { return _mm512_castpd_si512(v); }
  static V from_bits(I64x8::V v) { return _mm512_castsi512_pd(v); }
};

}  // namespace
}  // namespace kvbench::simd

namespace kvbench {
namespace {

// An unaligned load of 64 bytes (load128 and load256: simd_avx2.h).
inline __m512i load512(const uint8_t* p) { return _mm512_loadu_si512(p); }

}  // namespace
}  // namespace kvbench
