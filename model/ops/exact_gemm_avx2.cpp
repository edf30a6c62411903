// AVX2 + FMA path of exact_gemm: the shared register tiles (exact_gemm_impl.h)
// on 8-float vectors, four per panel row (16 registers: 8 accumulators, 4
// panel vectors, a broadcast); the last panel's rows through a buffer.
#include "model/ops/exact_gemm.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx2,fma")

#include "model/ops/exact_gemm_impl.h"
#include "model/ops/simd_avx2.h"

namespace kvbench::exact {
namespace {

struct Avx2 : simd::F32x8 {
  static constexpr int kTokens = 2;
  template <int T>
  static void store(float* y, int64_t ldy, const V (&acc)[T][4], int64_t nr) {
    alignas(32) float tmp[kPanelRows];
    for (int t = 0; t < T; ++t) {
      for (int v = 0; v < 4; ++v) _mm256_store_ps(tmp + 8 * v, acc[t][v]);
      std::copy(tmp, tmp + nr, y + t * ldy);
    }
  }
};

}  // namespace

GemmPanelsFn avx2_gemm_panels() { return gemm_panels<Avx2>; }

}  // namespace kvbench::exact

KVBENCH_TARGET_END()

#endif  // x86-64
