// Internal to attention_avx2.cpp and attention_avx512.cpp: the conversion of
// quantized rows' f16 group parameters both x86 paths share. Included inside each file's target
// region (F16C is in both), with internal linkage, so each path compiles its own copy.
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

}  // namespace
}  // namespace kvbench::attn
