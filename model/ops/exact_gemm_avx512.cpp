// AVX-512 path of exact_gemm: the shared register tiles (exact_gemm_impl.h)
// on 16-float vectors, two per panel row, the last panel's rows stored under
// a mask.
#include "model/ops/exact_gemm.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx512f,avx512vl,avx2,fma")

#include "model/ops/exact_gemm_impl.h"
#include "model/ops/simd_avx512.h"

namespace kvbench::exact {
namespace {

struct Avx512 : simd::F32x16 {
  // T = 12: 24 accumulators, the two panel vectors, and the broadcasts folded
  // into the FMAs' memory operands; each panel load serves 12 FMAs instead of
  // 8. SmolLM2's four Q4_1 shapes, 512 tokens, one thread, Xeon, medians of 5
  // alternating rounds: 139.7-143.6 GFLOP/s against 126.6-132.0 with T = 8;
  // T = 14 was within the noise of 12.
  static constexpr int kTokens = 12;
  template <int T>
  static void store(float* y, int64_t ldy, const V (&acc)[T][2], int64_t nr) {
    const auto lo = static_cast<__mmask16>(nr >= 16 ? 0xFFFFu : (1u << nr) - 1);
    const auto hi = static_cast<__mmask16>(nr >= 32   ? 0xFFFFu
                                           : nr <= 16 ? 0u
                                                      : (1u << (nr - 16)) - 1);
    KVBENCH_UNROLL
    for (int t = 0; t < T; ++t) {
      _mm512_mask_storeu_ps(y + t * ldy, lo, acc[t][0]);
      _mm512_mask_storeu_ps(y + t * ldy + 16, hi, acc[t][1]);
    }
  }
};

}  // namespace

GemmPanelsFn avx512_gemm_panels() { return gemm_panels<Avx512>; }

}  // namespace kvbench::exact

KVBENCH_TARGET_END()

#endif  // x86-64
