#include "model/ops/attention_f16.h"

#include "model/gguf/ggml_types.h"
#include "model/ops/quant_dot.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kvbench {
namespace {

#if defined(__x86_64__)
__attribute__((target("avx2,f16c"))) void f32_to_f16_f16c(const float* src, uint16_t* dst,
                                                          int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h =
        _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

__attribute__((target("avx2,f16c"))) void f16_to_f32_f16c(const uint16_t* src, float* dst,
                                                          int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}
#endif

// Probed once; the Avx2 path requires F16C.
bool have_f16c() {
#if defined(__x86_64__)
  static const bool yes = cpu_path_supported(CpuPath::Avx2);
  return yes;
#else
  return false;
#endif
}

}  // namespace

void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) {
#if defined(__x86_64__)
  if (have_f16c()) return f32_to_f16_f16c(src, dst, n);
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n) {
#if defined(__x86_64__)
  if (have_f16c()) return f16_to_f32_f16c(src, dst, n);
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

}  // namespace kvbench
