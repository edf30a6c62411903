#include "model/ops/silu.h"

#include <cmath>

#include "model/ops/silu_kernels.h"

namespace kvbench {

void silu_mul(float* gate, const float* up, int64_t n, CpuPath path) {
  int64_t done = 0;
  if (path == CpuPath::Avx512) done = silu::silu_mul_avx512(gate, up, n);
  if (path == CpuPath::Avx2) done = silu::silu_mul_avx2(gate, up, n);
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
