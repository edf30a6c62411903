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
#include "model/ops/simd_avx512.h"

namespace kvbench::silu {
namespace {

struct Avx512 {
  using F32 = simd::F32x16;
  using F64 = simd::F64x8;
  using I64 = simd::I64x8;
  // kTab in four registers: idx bit 4 picks the pair, bits 0-3 the entry.
  static I64::V table(I64::V idx) {
    const __m512i t0 = _mm512_load_si512(kTab), t1 = _mm512_load_si512(kTab + 8);
    const __m512i t2 = _mm512_load_si512(kTab + 16), t3 = _mm512_load_si512(kTab + 24);
    const __mmask8 upper = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(16));
    return _mm512_mask_blend_epi64(upper, _mm512_permutex2var_epi64(t0, idx, t1),
                                   _mm512_permutex2var_epi64(t2, idx, t3));
  }
  static __mmask16 special(F32::V x) {
    const __m512i top =
        _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(x), 20), _mm512_set1_epi32(0x7ff));
    return _mm512_cmpgt_epu32_mask(top, _mm512_set1_epi32(kMaxTop));
  }
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

#endif  // x86-64
