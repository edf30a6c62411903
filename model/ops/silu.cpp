#include "model/ops/silu.h"

#include <cmath>
#include <cstring>

#include "model/ops/silu_kernels.h"

namespace kvbench {
namespace {

// The kernels restate glibc's expf; under another C library (or another
// glibc algorithm) they could differ from the scalar loop. Checked once per
// process on 4,096 arguments spread over [-100, 100] and every exponent: any
// difference and silu_mul keeps to the scalar loop on that path.
bool agrees(int64_t (*kernel)(const float*, float*, int64_t)) {
  constexpr int kN = 4096;
  float x[kN], got[kN];
  for (int i = 0; i < kN; ++i) {
    if (i % 2 == 0) {
      x[i] = -100.0f + 200.0f * static_cast<float>(i) / kN;
    } else {
      const uint32_t bits = static_cast<uint32_t>(i) * 1048573u;  // odd: every exponent
      std::memcpy(&x[i], &bits, 4);
    }
  }
  const int64_t done = kernel(x, got, kN);
  for (int64_t i = 0; i < done; ++i) {
    const float want = std::exp(x[i]);
    if (std::memcmp(&want, &got[i], 4) != 0) return false;
  }
  return true;
}

}  // namespace

void silu_mul(float* gate, const float* up, int64_t n, CpuPath path) {
  static const bool avx512 = cpu_path_supported(CpuPath::Avx512) && agrees(silu::expf_avx512);
  static const bool avx2 = cpu_path_supported(CpuPath::Avx2) && agrees(silu::expf_avx2);
  int64_t done = 0;
  if (path == CpuPath::Avx512 && avx512) done = silu::silu_mul_avx512(gate, up, n);
  if (path == CpuPath::Avx2 && avx2) done = silu::silu_mul_avx2(gate, up, n);
  for (int64_t i = done; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void expf_rows(const float* x, float* out, int64_t n, CpuPath path) {
  int64_t done = 0;
  if (path == CpuPath::Avx512) done = silu::expf_avx512(x, out, n);
  if (path == CpuPath::Avx2) done = silu::expf_avx2(x, out, n);
  for (int64_t i = done; i < n; ++i) out[i] = std::exp(x[i]);
}

}  // namespace kvbench
