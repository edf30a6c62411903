// AVX2 + FMA path of the SwiGLU kernels: the shared algorithm (silu_impl.h)
// on 8 floats, glibc's expf on two halves of 4 double lanes, the 32-entry
// table read by a 64-bit gather.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "model/ops/silu_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx2,fma")

#include "model/ops/silu_impl.h"

namespace kvbench::silu {
namespace {

struct Avx2 {
  using F = __m256;
  using H = __m128;
  using D = __m256d;
  using L = __m256i;
  static constexpr int W = 8;
  static H lo(F x) { return _mm256_castps256_ps128(x); }
  static H hi(F x) { return _mm256_extractf128_ps(x, 1); }
  static F join(H lo, H hi) { return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1); }
  static D widen(H x) { return _mm256_cvtps_pd(x); }
  static H narrow(D x) { return _mm256_cvtpd_ps(x); }
  static D set1(double x) { return _mm256_set1_pd(x); }
  static D fmadd(D a, D b, D c) { return _mm256_fmadd_pd(a, b, c); }
  static D fmsub(D a, D b, D c) { return _mm256_fmsub_pd(a, b, c); }
  static D sub(D a, D b) { return _mm256_sub_pd(a, b); }
  static D mul(D a, D b) { return _mm256_mul_pd(a, b); }
  static L bits(D x) { return _mm256_castpd_si256(x); }
  static D from_bits(L x) { return _mm256_castsi256_pd(x); }
  static L low5(L x) { return _mm256_and_si256(x, _mm256_set1_epi64x(31)); }
  static L add(L a, L b) { return _mm256_add_epi64(a, b); }
  static L shl47(L x) { return _mm256_slli_epi64(x, 47); }
  static L table(L idx) {
    return _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kTab), idx, 8);
  }
  // top <= 0x7ff, so a signed compare is an unsigned one here.
  static int special(F x) {
    const __m256i top =
        _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 20), _mm256_set1_epi32(0x7ff));
    return _mm256_movemask_ps(
        _mm256_castsi256_ps(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(kMaxTop))));
  }
  static F set1f(float x) { return _mm256_set1_ps(x); }
  static F loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, F x) { _mm256_storeu_ps(p, x); }
  static F load(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, F x) { _mm256_store_ps(p, x); }
  static F xor_(F a, F b) { return _mm256_xor_ps(a, b); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
};

}  // namespace

int64_t silu_mul_avx2(float* gate, const float* up, int64_t n) {
  return silu_mul_kernel<Avx2>(gate, up, n);
}
int64_t expf_avx2(const float* x, float* out, int64_t n) { return expf_kernel<Avx2>(x, out, n); }

}  // namespace kvbench::silu

KVBENCH_TARGET_END()

#else  // not x86-64

namespace kvbench::silu {
int64_t silu_mul_avx2(float*, const float*, int64_t) { return 0; }
int64_t expf_avx2(const float*, float*, int64_t) { return 0; }
}  // namespace kvbench::silu

#endif
