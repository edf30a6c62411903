// The SwiGLU gate (model/ops/silu.h): the SIMD kernels' expf against the C
// library's on a stride of every float bit pattern (every pattern with
// KVBENCH_EXHAUSTIVE=1, about a minute), and the gate itself against the
// scalar loop, bit for bit, on every path this machine runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "model/ops/silu.h"

namespace kvbench {
namespace {

std::vector<CpuPath> simd() {
  std::vector<CpuPath> p;
  for (CpuPath c : {CpuPath::Avx2, CpuPath::Avx512})
    if (cpu_path_supported(c)) p.push_back(c);
  return p;
}

TEST(Silu, ExpMatchesTheCLibraryBitForBit) {
  const auto paths = simd();
  if (paths.empty()) GTEST_SKIP() << "no SIMD path on this machine";
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc: the kernels restate glibc's expf; silu_mul checks them at start and "
                  "keeps to the scalar loop where they differ";
#endif
  const char* env = std::getenv("KVBENCH_EXHAUSTIVE");
  const uint64_t step = env && std::strcmp(env, "1") == 0 ? 1 : 4099;  // prime: every exponent
  const size_t chunk = 1 << 20;
  std::vector<float> x, want(chunk), got(chunk);
  x.reserve(chunk);
  uint64_t checked = 0, mismatches = 0;
  auto flush = [&] {
    for (size_t i = 0; i < x.size(); ++i) want[i] = std::exp(x[i]);
    for (CpuPath p : paths) {
      expf_rows(x.data(), got.data(), static_cast<int64_t>(x.size()), p);
      for (size_t i = 0; i < x.size(); ++i) {
        if (std::memcmp(&want[i], &got[i], 4) != 0) {
          if (++mismatches <= 5)
            ADD_FAILURE() << cpu_path_name(p) << ": expf(" << std::hexfloat << x[i]
                          << ") = " << want[i] << ", kernel " << got[i];
        }
      }
      checked += x.size();
    }
    x.clear();
  };
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += step) {
    float f;
    const auto bits = static_cast<uint32_t>(u);
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
    if (x.size() == chunk) flush();
  }
  for (float f : {0.0f, -0.0f, 88.0f, -88.0f, 87.99f, -87.99f, -103.0f, 1e-30f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()})
    x.push_back(f);
  flush();
  EXPECT_EQ(mismatches, 0u) << "of " << checked;
  std::printf("expf: %llu values compared, %llu differ\n", static_cast<unsigned long long>(checked),
              static_cast<unsigned long long>(mismatches));
}

TEST(Silu, GateMatchesTheScalarLoop) {
  std::mt19937 rng(21);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  for (int64_t n : {1, 15, 16, 17, 100, 1536}) {
    std::vector<float> gate(n), up(n);
    for (int64_t i = 0; i < n; ++i) {
      gate[i] = normal(rng);
      up[i] = normal(rng);
    }
    if (n >= 16) {
      gate[3] = 95.0f;  // beyond the kernels' range: expf itself
      gate[5] = -120.0f;
      gate[7] = std::numeric_limits<float>::quiet_NaN();
      gate[9] = -0.0f;
    }
    std::vector<float> want = gate;
    silu_mul(want.data(), up.data(), n, CpuPath::Scalar);
    for (int64_t i = 0; i < n; ++i) {
      const float g = gate[i];
      const float ref = g / (1.0f + std::exp(-g)) * up[i];
      ASSERT_EQ(0, std::memcmp(&ref, &want[i], 4)) << "scalar path, i " << i;
    }
    for (CpuPath p : simd()) {
      std::vector<float> got = gate;
      silu_mul(got.data(), up.data(), n, p);
      ASSERT_EQ(0, std::memcmp(want.data(), got.data(), n * sizeof(float)))
          << cpu_path_name(p) << " n " << n;
    }
  }
}

}  // namespace
}  // namespace kvbench
