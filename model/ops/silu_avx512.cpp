// AVX-512 path of the SwiGLU kernels: the shared algorithm (silu_impl.h) on
// 16 floats, glibc's expf on two halves of 8 double lanes, the 32-entry table
// read by two two-register permutes.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "model/ops/silu_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx512f,avx512dq,avx512vl,avx2,fma")

#include "model/ops/silu_impl.h"

namespace kvbench::silu {
namespace {

struct Avx512 {
  using F = __m512;
  using H = __m256;
  using D = __m512d;
  using L = __m512i;
  static constexpr int W = 16;
  static H lo(F x) { return _mm512_castps512_ps256(x); }
  static H hi(F x) { return _mm512_extractf32x8_ps(x, 1); }
  static F join(H lo, H hi) { return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1); }
  static D widen(H x) { return _mm512_cvtps_pd(x); }
  static H narrow(D x) { return _mm512_cvtpd_ps(x); }
  static D set1(double x) { return _mm512_set1_pd(x); }
  static D fmadd(D a, D b, D c) { return _mm512_fmadd_pd(a, b, c); }
  static D fmsub(D a, D b, D c) { return _mm512_fmsub_pd(a, b, c); }
  static D sub(D a, D b) { return _mm512_sub_pd(a, b); }
  static D mul(D a, D b) { return _mm512_mul_pd(a, b); }
  static L bits(D x) { return _mm512_castpd_si512(x); }
  static D from_bits(L x) { return _mm512_castsi512_pd(x); }
  static L low5(L x) { return _mm512_and_si512(x, _mm512_set1_epi64(31)); }
  static L add(L a, L b) { return _mm512_add_epi64(a, b); }
  static L shl47(L x) { return _mm512_slli_epi64(x, 47); }
  // kTab in four registers: idx bit 4 picks the pair, bits 0-3 the entry.
  static L table(L idx) {
    const __m512i t0 = _mm512_load_si512(kTab), t1 = _mm512_load_si512(kTab + 8);
    const __m512i t2 = _mm512_load_si512(kTab + 16), t3 = _mm512_load_si512(kTab + 24);
    const __mmask8 upper = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(16));
    return _mm512_mask_blend_epi64(upper, _mm512_permutex2var_epi64(t0, idx, t1),
                                   _mm512_permutex2var_epi64(t2, idx, t3));
  }
  static __mmask16 special(F x) {
    const __m512i top =
        _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(x), 20), _mm512_set1_epi32(0x7ff));
    return _mm512_cmpgt_epu32_mask(top, _mm512_set1_epi32(kMaxTop));
  }
  static F set1f(float x) { return _mm512_set1_ps(x); }
  static F loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, F x) { _mm512_storeu_ps(p, x); }
  static F load(const float* p) { return _mm512_load_ps(p); }
  static void store(float* p, F x) { _mm512_store_ps(p, x); }
  static F xor_(F a, F b) { return _mm512_xor_ps(a, b); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
};

}  // namespace

int64_t silu_mul_avx512(float* gate, const float* up, int64_t n) {
  return silu_mul_kernel<Avx512>(gate, up, n);
}
int64_t expf_avx512(const float* x, float* out, int64_t n) {
  return expf_kernel<Avx512>(x, out, n);
}

}  // namespace kvbench::silu

KVBENCH_TARGET_END()

#else  // not x86-64

namespace kvbench::silu {
int64_t silu_mul_avx512(float*, const float*, int64_t) { return 0; }
int64_t expf_avx512(const float*, float*, int64_t) { return 0; }
}  // namespace kvbench::silu

#endif
