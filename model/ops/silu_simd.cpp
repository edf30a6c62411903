// AVX-512 and AVX2 kernels of silu.h: glibc's expf in double lanes (see
// silu_kernels.h), then the gate's float steps as the scalar loop does them.
// The operation order mirrors the library's FMA build exactly:
//   kds = fma(N/ln2, xd, shift); kd = kds - shift; r = fma(N/ln2, xd, -kd)
//   s = bits(tab[k % 32] + (k << 47)); z = fma(r, C0, C1); r2 = r * r
//   y = fma(r, C2, 1); y = fma(z, r2, y); exp = float(y * s)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "model/ops/silu_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cmath>
#include <cstring>

namespace kvbench::silu {
namespace {

float scalar_exp(float x) { return std::exp(x); }

}  // namespace

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512vl,avx2,fma")
#endif

namespace {

// 8 floats widened to double -> 8 expf values.
__m256 exp8_512(__m256 x) {
  const __m512d xd = _mm512_cvtps_pd(x);
  const __m512d inv = _mm512_set1_pd(kInvLn2N), shift = _mm512_set1_pd(kShift);
  const __m512d kds = _mm512_fmadd_pd(inv, xd, shift);
  const __m512i ki = _mm512_castpd_si512(kds);
  const __m512d kd = _mm512_sub_pd(kds, shift);
  const __m512d r = _mm512_fmsub_pd(inv, xd, kd);
  const __m512i idx = _mm512_and_si512(ki, _mm512_set1_epi64(31));
  const __m512i t0 = _mm512_load_si512(kTab), t1 = _mm512_load_si512(kTab + 8);
  const __m512i t2 = _mm512_load_si512(kTab + 16), t3 = _mm512_load_si512(kTab + 24);
  const __mmask8 upper = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(16));
  __m512i t = _mm512_mask_blend_epi64(upper, _mm512_permutex2var_epi64(t0, idx, t1),
                                      _mm512_permutex2var_epi64(t2, idx, t3));
  t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 47));
  const __m512d s = _mm512_castsi512_pd(t);
  const __m512d z = _mm512_fmadd_pd(r, _mm512_set1_pd(kC0), _mm512_set1_pd(kC1));
  const __m512d r2 = _mm512_mul_pd(r, r);
  __m512d y = _mm512_fmadd_pd(r, _mm512_set1_pd(kC2), _mm512_set1_pd(1.0));
  y = _mm512_fmadd_pd(z, r2, y);
  return _mm512_cvtpd_ps(_mm512_mul_pd(y, s));
}

// 16 expf values; lanes past glibc's fast range through expf itself.
__m512 exp16(__m512 x) {
  __m512 e = _mm512_insertf32x8(_mm512_castps256_ps512(exp8_512(_mm512_castps512_ps256(x))),
                                exp8_512(_mm512_extractf32x8_ps(x, 1)), 1);
  const __m512i top =
      _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(x), 20), _mm512_set1_epi32(0x7ff));
  const __mmask16 special = _mm512_cmpgt_epu32_mask(top, _mm512_set1_epi32(kMaxTop));
  if (special != 0) {
    alignas(64) float xs[16], es[16];
    _mm512_store_ps(xs, x);
    _mm512_store_ps(es, e);
    for (int i = 0; i < 16; ++i)
      if ((special >> i) & 1) es[i] = scalar_exp(xs[i]);
    e = _mm512_load_ps(es);
  }
  return e;
}

}  // namespace

int64_t silu_mul_avx512(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 e = exp16(_mm512_xor_ps(g, sign));
    _mm512_storeu_ps(
        gate + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_loadu_ps(up + i)));
  }
  return i;
}

int64_t expf_avx512(const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, exp16(_mm512_loadu_ps(x + i)));
  return i;
}

#if defined(__clang__)
#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

namespace {

// 4 floats widened to double -> 4 expf values.
__m128 exp4_256(__m128 x) {
  const __m256d xd = _mm256_cvtps_pd(x);
  const __m256d inv = _mm256_set1_pd(kInvLn2N), shift = _mm256_set1_pd(kShift);
  const __m256d kds = _mm256_fmadd_pd(inv, xd, shift);
  const __m256i ki = _mm256_castpd_si256(kds);
  const __m256d kd = _mm256_sub_pd(kds, shift);
  const __m256d r = _mm256_fmsub_pd(inv, xd, kd);
  const __m256i idx = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
  __m256i t = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kTab), idx, 8);
  t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 47));
  const __m256d s = _mm256_castsi256_pd(t);
  const __m256d z = _mm256_fmadd_pd(r, _mm256_set1_pd(kC0), _mm256_set1_pd(kC1));
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d y = _mm256_fmadd_pd(r, _mm256_set1_pd(kC2), _mm256_set1_pd(1.0));
  y = _mm256_fmadd_pd(z, r2, y);
  return _mm256_cvtpd_ps(_mm256_mul_pd(y, s));
}

__m256 exp8_256(__m256 x) {
  __m256 e = _mm256_insertf128_ps(_mm256_castps128_ps256(exp4_256(_mm256_castps256_ps128(x))),
                                  exp4_256(_mm256_extractf128_ps(x, 1)), 1);
  const __m256i top =
      _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 20), _mm256_set1_epi32(0x7ff));
  // top <= 0x7ff, so a signed compare is an unsigned one here.
  const int special =
      _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(kMaxTop))));
  if (special != 0) {
    alignas(32) float xs[8], es[8];
    _mm256_store_ps(xs, x);
    _mm256_store_ps(es, e);
    for (int i = 0; i < 8; ++i)
      if ((special >> i) & 1) es[i] = scalar_exp(xs[i]);
    e = _mm256_load_ps(es);
  }
  return e;
}

}  // namespace

int64_t silu_mul_avx2(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = exp8_256(_mm256_xor_ps(g, sign));
    _mm256_storeu_ps(
        gate + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
  return i;
}

int64_t expf_avx2(const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, exp8_256(_mm256_loadu_ps(x + i)));
  return i;
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

}  // namespace kvbench::silu

#else  // not x86-64

namespace kvbench::silu {
int64_t silu_mul_avx512(float*, const float*, int64_t) { return 0; }
int64_t silu_mul_avx2(float*, const float*, int64_t) { return 0; }
int64_t expf_avx512(const float*, float*, int64_t) { return 0; }
int64_t expf_avx2(const float*, float*, int64_t) { return 0; }
}  // namespace kvbench::silu

#endif
