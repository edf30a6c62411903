// Internal to attention_avx2.cpp and attention_avx512.cpp: what both x86
// paths share, the conversion of quantized rows' f16 group parameters and
// exp2's polynomial. Included inside each file's target region (F16C and FMA
// are in both), with internal linkage, so each path compiles its own copy.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace kvbench::attn {
namespace {

// n f16 values as floats: eight at a time, then four, then one by one (never
// reading past n).
inline void f16c_halves(const uint16_t* h, int n, float* out) {
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
  for (; i + 4 <= n; i += 4)
    _mm_storeu_ps(out + i, _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(h + i))));
  for (; i < n; ++i) out[i] = _cvtsh_ss(h[i]);
}

// 2^x = 2^n * 2^f with n = round(x), |f| <= 1/2, 2^f by its Taylor series
// to degree 7; 0 below -126 (no subnormals), x capped at 127. I: the path's
// interface; its float basics, and pow2_scale(x, p, n) = p * 2^n, or 0 where
// x < -126.
template <class I>
inline typename I::V exp2_taylor(typename I::V x) {
  using V = typename I::V;
  const V xc = I::min(I::max(x, I::set1(-126.0f)), I::set1(127.0f));
  const V n = I::round(xc);
  const V f = I::sub(xc, n);
  V p = I::set1(1.5252734e-5f);
  p = I::fmadd(p, f, I::set1(1.5403530e-4f));
  p = I::fmadd(p, f, I::set1(1.3333558e-3f));
  p = I::fmadd(p, f, I::set1(9.6181291e-3f));
  p = I::fmadd(p, f, I::set1(5.5504109e-2f));
  p = I::fmadd(p, f, I::set1(2.4022651e-1f));
  p = I::fmadd(p, f, I::set1(6.9314718e-1f));
  p = I::fmadd(p, f, I::set1(1.0f));
  return I::pow2_scale(x, p, n);
}

}  // namespace
}  // namespace kvbench::attn
