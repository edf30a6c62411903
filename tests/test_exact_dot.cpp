// The exact path's kernels (model/ops/exact_dot.h): the reference dot product's
// summation order by hand-built cases that only that order gives, every SIMD
// path bit for bit against the scalar reference (decoded rows and tiles of
// every shape), and the reference against a double-precision sum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "model/gguf/ggml_types.h"
#include "model/ops/exact_dot.h"
#include "model/ops/planar.h"
#include "tests/support/weight_rows.h"

namespace kvbench {
namespace {

using test::gaussian;
using test::kWeightTypes;
using test::lengths;
using test::random_weights;
using test::simd_paths;

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// 2^24 + 1 + 1 in sequence rounds back to 2^24 twice; in lanes 0, 1 and 3
// the two ones meet first (fold l + 2), and 2^24 + 2 is exact.
TEST(ExactDot, ReferenceFoldsLanesPairwise) {
  std::vector<float> w(16, 1.0f), x(16, 0.0f);
  x[0] = 16777216.0f;
  x[1] = 1.0f;
  x[3] = 1.0f;
  EXPECT_EQ(exact_dot_reference(w.data(), x.data(), 16), 16777218.0f);
  x[3] = 0.0f;
  x[2] = 1.0f;  // lanes 0 and 2 meet at l + 2: the tie rounds to even
  EXPECT_EQ(exact_dot_reference(w.data(), x.data(), 16), 16777216.0f);
}

// Elements 0 and 16 share lane 0, in that order, with one rounding: -1 then
// (1 + 2^-12)^2 fused gives 2^-11 + 2^-24 exactly; a separate multiply would
// lose the 2^-24.
TEST(ExactDot, ReferenceFusesEachProductIntoItsLane) {
  std::vector<float> w(17, 0.0f), x(17, 0.0f);
  const float e = 1.0f + std::ldexp(1.0f, -12);
  w[0] = -1.0f;
  x[0] = 1.0f;
  w[16] = e;
  x[16] = e;
  EXPECT_EQ(exact_dot_reference(w.data(), x.data(), 17),
            std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24));
}

// Every type (those with SIMD decoders and those that fall back to the
// scalar one), every row length class, tiles of 1..7 tokens and 9 rows (two
// four-row micro-kernels and a single row): the same bits as the reference.
TEST(ExactDot, SimdPathsAreBitIdenticalToReference) {
  const auto paths = simd_paths();
  if (paths.empty()) GTEST_SKIP() << "no SIMD path on this machine";
  std::mt19937 rng(11);
  std::vector<GgmlType> types(std::begin(kWeightTypes), std::end(kWeightTypes));
  for (GgmlType t : types) {
    for (int64_t n : lengths(t)) {
      const int rows = 9;
      const auto w = random_weights(t, rows, n, rng);
      const size_t wb = row_bytes(t, n);
      for (int64_t n_x : {1, 2, 3, 4, 5, 7}) {
        auto x = gaussian(rng, n_x * n, 1.0f);
        x[(n_x * 5) % x.size()] = 60.0f;  // an outlier, as activations have
        std::vector<float> ref(rows * n_x), got(rows * n_x);
        exact_dot_tile(t, w.data(), wb, rows, x.data(), n, n_x, n, ref.data(), rows,
                       CpuPath::Scalar);
        for (CpuPath p : paths) {
          std::fill(got.begin(), got.end(), -1.0f);
          exact_dot_tile(t, w.data(), wb, rows, x.data(), n, n_x, n, got.data(), rows, p);
          for (int i = 0; i < rows * n_x; ++i) {
            ASSERT_TRUE(same_bits(ref[i], got[i]))
                << type_name(t) << " n=" << n << " tokens=" << n_x << " " << cpu_path_name(p)
                << " row " << i % rows << " token " << i / rows << ": " << ref[i] << " vs "
                << got[i];
          }
        }
      }
      std::vector<float> ref(n), got(n);
      for (int r = 0; r < rows; ++r) {
        dequantize_row(t, w.data() + r * wb, ref.data(), n);
        for (CpuPath p : paths) {
          std::fill(got.begin(), got.end(), -1.0f);
          dequantize_row_fast(t, w.data() + r * wb, got.data(), n, p);
          for (int64_t i = 0; i < n; ++i) {
            ASSERT_TRUE(same_bits(ref[i], got[i]))
                << type_name(t) << " n=" << n << " " << cpu_path_name(p) << " row " << r
                << " element " << i;
          }
        }
      }
    }
  }
}

// Planar rows (Q4_0, Q4_1, Q8_0 read in place; Q5_0, Q5_1 converted back;
// odd block counts leave a partial group of four): the same bits as the GGUF
// rows, on every path.
TEST(ExactDot, PlanarRowsGiveTheSameBits) {
  std::mt19937 rng(13);
  std::vector<CpuPath> paths = simd_paths();
  paths.push_back(CpuPath::Scalar);
  for (GgmlType t :
       {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0}) {
    for (int64_t n : lengths(t)) {
      const int rows = 6, n_x = 2;
      const auto w = random_weights(t, rows, n, rng);
      const size_t wb = row_bytes(t, n);
      std::vector<uint8_t> planar(w.size());
      for (int r = 0; r < rows; ++r) to_planar_row(t, w.data() + r * wb, planar.data() + r * wb, n);
      const auto x = gaussian(rng, n_x * n, 1.0f);
      std::vector<float> ref(rows * n_x), got(rows * n_x);
      exact_dot_tile(t, w.data(), wb, rows, x.data(), n, n_x, n, ref.data(), rows, CpuPath::Scalar);
      for (CpuPath p : paths) {
        std::fill(got.begin(), got.end(), -1.0f);
        exact_dot_tile_planar(t, planar.data(), wb, rows, x.data(), n, n_x, n, got.data(), rows, p);
        for (int i = 0; i < rows * n_x; ++i) {
          ASSERT_TRUE(same_bits(ref[i], got[i]))
              << type_name(t) << " n=" << n << " " << cpu_path_name(p) << " output " << i;
        }
      }
    }
  }
}

// The reference against the dequantized row times x summed in double: within
// a few f32 roundings of the sum of magnitudes.
TEST(ExactDot, ReferenceMatchesDoubleSum) {
  std::mt19937 rng(12);
  for (GgmlType t : kWeightTypes) {
    const int64_t n = test::is_kquant(t) ? 1536 : 576;
    const auto w = random_weights(t, 4, n, rng);
    const auto x = gaussian(rng, n, 1.0f);
    std::vector<float> row(n);
    for (int r = 0; r < 4; ++r) {
      dequantize_row(t, w.data() + r * row_bytes(t, n), row.data(), n);
      double sum = 0, mag = 0;
      for (int64_t i = 0; i < n; ++i) {
        sum += static_cast<double>(row[i]) * x[i];
        mag += std::fabs(static_cast<double>(row[i]) * x[i]);
      }
      float got = 0;
      exact_dot_tile(t, w.data() + r * row_bytes(t, n), 0, 1, x.data(), n, 1, n, &got, 1,
                     CpuPath::Scalar);
      EXPECT_NEAR(got, sum, 1e-6 * mag + 1e-30) << type_name(t) << " row " << r;
    }
  }
}

}  // namespace
}  // namespace kvbench
