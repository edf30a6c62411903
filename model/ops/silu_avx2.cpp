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
#include "model/ops/simd_avx2.h"

namespace kvbench::silu {
namespace {

struct Avx2 {
  using F32 = simd::F32x8;
  using F64 = simd::F64x4;
  using I64 = simd::I64x4;
  static I64::V table(I64::V idx) {
    return _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kTab), idx, 8);
  }
  // top <= 0x7ff, so a signed compare is an unsigned one here.
  static int special(F32::V x) {
    const __m256i top =
        _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 20), _mm256_set1_epi32(0x7ff));
    return _mm256_movemask_ps(
        _mm256_castsi256_ps(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(kMaxTop))));
  }
};

}  // namespace

int64_t silu_mul_avx2(float* gate, const float* up, int64_t n) {
  return silu_mul_kernel<Avx2>(gate, up, n);
}
int64_t expf_avx2(const float* x, float* out, int64_t n) { return expf_kernel<Avx2>(x, out, n); }

}  // namespace kvbench::silu

KVBENCH_TARGET_END()

#endif  // x86-64
