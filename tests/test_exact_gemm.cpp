// Exact prefill's GEMM (model/ops/exact_gemm.h): the reference's order by a
// hand-built case only that order gives, the panel packing, every path bit
// for bit against the reference on every tile shape (row tails inside a
// panel, token tails of every size), and the reference against doubles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "model/ops/exact_gemm.h"
#include "tests/support/weight_rows.h"

namespace kvbench {
namespace {

// One chain in column order: 2^24, then +1, +1 rounds back to 2^24 twice;
// -2^24 last leaves 0. Any pairing of the ones first would give 2.
TEST(ExactGemm, ReferenceIsOneChainInColumnOrder) {
  const std::vector<float> w{1.0f, 1.0f, 1.0f, 1.0f}, x{16777216.0f, 1.0f, 1.0f, -16777216.0f};
  float y = -1.0f;
  exact_gemm_reference(w.data(), 4, 1, x.data(), 4, 1, 4, &y, 1);
  EXPECT_EQ(y, 0.0f);
}

TEST(ExactGemm, PanelsHoldRowsColumnMajorZeroPadded) {
  const int64_t rows = 35, k = 3;
  std::vector<float> w(rows * k);
  for (int64_t i = 0; i < rows * k; ++i) w[i] = static_cast<float>(i + 1);
  std::vector<float> p(exact_gemm_panel_floats(rows, k), -1.0f);
  ASSERT_EQ(p.size(), 2u * k * kPanelRows);
  exact_gemm_pack(w.data(), k, rows, k, p.data());
  for (int64_t r = 0; r < 2 * kPanelRows; ++r)
    for (int64_t c = 0; c < k; ++c)
      EXPECT_EQ(p[r / kPanelRows * k * kPanelRows + c * kPanelRows + r % kPanelRows],
                r < rows ? w[r * k + c] : 0.0f)
          << r << "," << c;
}

TEST(ExactGemm, EveryPathIsBitIdenticalToTheReference) {
  std::mt19937 rng(7);
  std::vector<CpuPath> paths = test::simd_paths();
  paths.push_back(CpuPath::Scalar);
  for (int64_t rows : {1, 16, 31, 32, 33, 96, 100})
    for (int64_t tokens : {1, 2, 5, 8, 9, 12, 17, 25})
      for (int64_t k : {1, 7, 64, 576}) {
        const auto w = test::gaussian(rng, rows * k, 0.1f);
        const auto x = test::gaussian(rng, tokens * k, 1.0f);
        const int64_t ldy = rows + 3;  // outputs land in a wider matrix
        std::vector<float> want(tokens * ldy, 7.0f);
        exact_gemm_reference(w.data(), k, rows, x.data(), k, tokens, k, want.data(), ldy);
        std::vector<float> panels(exact_gemm_panel_floats(rows, k));
        exact_gemm_pack(w.data(), k, rows, k, panels.data());
        for (CpuPath path : paths) {
          std::vector<float> got(tokens * ldy, 7.0f);
          exact_gemm_panels(panels.data(), rows, x.data(), k, tokens, k, got.data(), ldy, path);
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(float) * got.size()))
              << cpu_path_name(path) << " rows " << rows << " tokens " << tokens << " k " << k;
        }
      }
}

// Against a double-precision sum: f32 chains of 576 terms of mixed sign stay
// within a few units of the sum of magnitudes' rounding.
TEST(ExactGemm, ReferenceIsCloseToDoubles) {
  std::mt19937 rng(3);
  const int64_t rows = 40, tokens = 6, k = 576;
  const auto w = test::gaussian(rng, rows * k, 0.1f);
  const auto x = test::gaussian(rng, tokens * k, 1.0f);
  std::vector<float> y(tokens * rows);
  exact_gemm_reference(w.data(), k, rows, x.data(), k, tokens, k, y.data(), rows);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0, mag = 0;
      for (int64_t c = 0; c < k; ++c) {
        s += double{w[r * k + c]} * x[t * k + c];
        mag += std::fabs(double{w[r * k + c]} * x[t * k + c]);
      }
      EXPECT_NEAR(y[t * rows + r], s, mag * k * 6e-8) << t << "," << r;
    }
}

}  // namespace
}  // namespace kvbench
