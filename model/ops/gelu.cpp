// geglu(): the scalar loop (which the compiler vectorizes for the baseline
// x86-64 with SSE2) and an AVX-512 loop of 16 lanes. The AVX-512 loop repeats
// gelu_tanh_fast()'s operations one by one, in the same order, with no fused
// multiply-add, so both give the same bits (tests/test_gemma3.cpp checks it).
// a * b + c must not be fused behind our back.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "model/ops/gelu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kvbench {
namespace {

void geglu_scalar(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = gelu_tanh_fast(gate[i]) * up[i];
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void geglu_avx512(float* gate, const float* up, int64_t n) {
  using namespace gelu_const;
  const __m512 one = _mm512_set1_ps(1.0f), round = _mm512_set1_ps(kRound);
  const __m512i round_bits = _mm512_set1_epi32(std::bit_cast<int32_t>(kRound));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(gate + i);
    // u = (kSqrt2OverPi * x) * (1 + (kCubic * x) * x)
    const __m512 u = _mm512_mul_ps(
        _mm512_mul_ps(_mm512_set1_ps(kSqrt2OverPi), x),
        _mm512_add_ps(one, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(kCubic), x), x)));
    // exp_bounded(-2 u); vmaxps / vminps return their second operand when
    // it is NaN, as std::max(y, lo) / std::min(y, hi) return y.
    __m512 y = _mm512_mul_ps(_mm512_set1_ps(-2.0f), u);
    y = _mm512_min_ps(_mm512_set1_ps(kExpHi), _mm512_max_ps(_mm512_set1_ps(kExpLo), y));
    const __m512 t = _mm512_add_ps(_mm512_mul_ps(y, _mm512_set1_ps(kLog2e)), round);
    const __m512 nf = _mm512_sub_ps(t, round);
    __m512 r = _mm512_sub_ps(y, _mm512_mul_ps(nf, _mm512_set1_ps(kLn2Hi)));
    r = _mm512_sub_ps(r, _mm512_mul_ps(nf, _mm512_set1_ps(kLn2Lo)));
    __m512 p = _mm512_set1_ps(kP[0]);
    for (int k = 1; k < 6; ++k) p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kP[k]));
    p = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(p, _mm512_mul_ps(r, r)), r), one);
    const __m512i e = _mm512_add_epi32(_mm512_sub_epi32(_mm512_castps_si512(t), round_bits),
                                       _mm512_set1_epi32(127));
    const __m512 ex = _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(e, 23)));
    const __m512 g = _mm512_div_ps(x, _mm512_add_ps(one, ex));
    _mm512_storeu_ps(gate + i, _mm512_mul_ps(g, _mm512_loadu_ps(up + i)));
  }
  geglu_scalar(gate + i, up + i, n - i);
}
#endif

}  // namespace

void geglu(float* gate, const float* up, int64_t n, CpuPath path) {
#if defined(__x86_64__)
  if (path == CpuPath::Avx512) return geglu_avx512(gate, up, n);
#endif
  geglu_scalar(gate, up, n);
}

}  // namespace kvbench
