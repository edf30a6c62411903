// Quantized dot products (model/ops/quant_dot.h): the activation quantizers
// against hand-computed blocks and ggml's reference rounding, the scalar
// reference dots against double-precision sums of dequantized values, and
// every SIMD path this machine runs against the scalar reference, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/common/error.h"
#include "model/gguf/ggml_types.h"
#include "model/ops/interleave.h"
#include "model/ops/planar.h"
#include "model/ops/quant_dot.h"
#include "model/ops/quant_dot_interleaved.h"
#include "tests/support/weight_rows.h"

namespace kvbench {
namespace {

using test::gaussian;
using test::is_kquant;
using test::is_plain;
using test::kWeightTypes;
using test::lengths;
using test::random_weights;
using test::simd_paths;

// n_act activation rows of the weight's activation type, quantized by the
// reference quantizer. Some rows carry an outlier, one is all zeros.
std::vector<uint8_t> random_activations(GgmlType weight, int64_t n_act, int64_t n,
                                        std::mt19937& rng) {
  const GgmlType at = *dot_activation_type(weight);
  const size_t rb = row_bytes(at, n);
  std::vector<uint8_t> a(n_act * rb);
  for (int64_t t = 0; t < n_act; ++t) {
    auto x = gaussian(rng, n, 1.0f);
    if (t % 3 == 1) x[(t * 7) % n] = 40.0f;
    if (t == 4) std::fill(x.begin(), x.end(), 0.0f);
    quantize_row(at, x.data(), a.data() + t * rb, n);
  }
  return a;
}

// --- activation quantizers --------------------------------------------------

uint16_t get_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// amax = 127 makes d = 1 and 1/d = 1 exact, so q = roundf(x) by hand, with
// ties going away from zero.
TEST(QuantizeActivations, Q8_0AndQ8_1MatchHandComputedBlock) {
  std::vector<float> x(32, 0.0f);
  const float vals[] = {127.0f, -3.5f, 2.5f, 0.49f, -0.5f, 1.5f, -126.6f, 0.5f, -2.5f, 64.2f};
  std::copy(std::begin(vals), std::end(vals), x.begin());
  const int8_t expect[] = {127, -4, 3, 0, -1, 2, -127, 1, -3, 64};
  int sum = 0;
  for (int8_t q : expect) sum += q;
  for (CpuPath path : {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512}) {
    if (!cpu_path_supported(path)) continue;
    uint8_t b0[34], b1[36];
    quantize_activations(GgmlType::Q8_0, x.data(), b0, 32, path);
    quantize_activations(GgmlType::Q8_1, x.data(), b1, 32, path);
    EXPECT_EQ(get_u16(b0), 0x3C00) << cpu_path_name(path);  // d = 1.0 in f16
    EXPECT_EQ(get_u16(b1), 0x3C00) << cpu_path_name(path);
    EXPECT_EQ(fp16_to_fp32(get_u16(b1 + 2)), static_cast<float>(sum)) << "s = d * sum(q)";
    for (int j = 0; j < 32; ++j) {
      const int8_t e = j < 10 ? expect[j] : 0;
      EXPECT_EQ(static_cast<int8_t>(b0[2 + j]), e) << cpu_path_name(path) << " element " << j;
      EXPECT_EQ(static_cast<int8_t>(b1[4 + j]), e) << cpu_path_name(path) << " element " << j;
    }
  }
}

// Q8_K: the first value of largest magnitude maps to -127 (here +127 comes
// before -127, so iscale = -1 and d = -1); nearest with ties to even.
TEST(QuantizeActivations, Q8_KMatchesHandComputedBlock) {
  std::vector<float> x(256, 0.0f);
  x[0] = 2.5f;     // -> -2 (tie to even)
  x[1] = 127.0f;   // the max: -> -127
  x[2] = -127.0f;  // -> 127
  x[3] = -3.5f;    // -> 4 (tie to even)
  x[17] = 10.4f;   // -> -10, in the second group of 16
  x[255] = -0.5f;  // -> 0
  for (CpuPath path : {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512}) {
    if (!cpu_path_supported(path)) continue;
    std::vector<uint8_t> b(292);
    quantize_activations(GgmlType::Q8_K, x.data(), b.data(), 256, path);
    float d;
    std::memcpy(&d, b.data(), 4);
    EXPECT_EQ(d, -1.0f) << cpu_path_name(path);
    const auto q = [&](int j) { return static_cast<int8_t>(b[4 + j]); };
    EXPECT_EQ(q(0), -2);
    EXPECT_EQ(q(1), -127);
    EXPECT_EQ(q(2), 127);
    EXPECT_EQ(q(3), 4);
    EXPECT_EQ(q(17), -10);
    EXPECT_EQ(q(255), 0);
    int16_t bs0, bs1;
    std::memcpy(&bs0, b.data() + 260, 2);
    std::memcpy(&bs1, b.data() + 262, 2);
    EXPECT_EQ(bs0, -2 - 127 + 127 + 4) << cpu_path_name(path);
    EXPECT_EQ(bs1, -10);
  }
}

// The SIMD quantizers against the reference quantizer on blocks that stress
// the rounding: Gaussian data, exact .5 multiples of d, zeros, one non-zero,
// huge and subnormal values.
TEST(QuantizeActivations, SimdPathsAreBitIdenticalToReference) {
  std::mt19937 rng(1);
  const int64_t n = 4096;
  std::vector<float> x = gaussian(rng, n, 1.0f);
  for (int i = 0; i < 32; ++i) x[256 + i] = (i - 16) * 0.5f;    // halves, amax 8
  for (int i = 0; i < 32; ++i) x[288 + i] = 127.0f - i - 0.5f;  // ties at d = 1
  std::fill(x.begin() + 512, x.begin() + 768, 0.0f);            // zero blocks (and a Q8_K block)
  x[800] = -3.0f;                                               // one non-zero in a block
  for (int i = 0; i < 32; ++i) x[1024 + i] = 1e30f * (i % 2 ? 1 : -1) * (i + 1);
  for (int i = 0; i < 32; ++i) x[1056 + i] = 1e-40f * i;                        // subnormals
  for (int i = 0; i < 256; ++i) x[2048 + i] = (i % 2 ? -1.0f : 1.0f) * 127.0f;  // equal magnitudes
  for (GgmlType at : {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K}) {
    const size_t rb = row_bytes(at, n);
    std::vector<uint8_t> ref(rb), fast(rb);
    quantize_row(at, x.data(), ref.data(), n);
    for (CpuPath path : {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512}) {
      if (!cpu_path_supported(path)) continue;
      std::fill(fast.begin(), fast.end(), 0xAA);
      quantize_activations(at, x.data(), fast.data(), n, path);
      EXPECT_EQ(0, std::memcmp(ref.data(), fast.data(), rb))
          << type_name(at) << " " << cpu_path_name(path);
    }
  }
}

// --- dot products -----------------------------------------------------------

// The scalar reference against the plain definition: sum over elements of
// dequantized weight times dequantized activation, in double. Differences:
// f32 accumulation (relative ~1e-6 of sum |w a|) and, for Q4_1 / Q5_1, the
// activation sum s = d * sum(q) that Q8_1 stores in f16 as ggml does (the
// min term m * s carries its rounding, 2^-11 relative).
TEST(QuantDot, ScalarReferenceMatchesDequantizedDoubleSum) {
  std::mt19937 rng(2);
  for (GgmlType t : kWeightTypes) {
    const GgmlType at = *dot_activation_type(t);
    for (int64_t n : lengths(t)) {
      const auto w = random_weights(t, 4, n, rng);
      const auto a = random_activations(t, 5, n, rng);
      const size_t wb = row_bytes(t, n), ab = row_bytes(at, n);
      std::vector<float> wf(n), af(n);
      for (int r = 0; r < 4; ++r) {
        dequantize_row(t, w.data() + r * wb, wf.data(), n);
        for (int s = 0; s < 5; ++s) {
          dequantize_row(at, a.data() + s * ab, af.data(), n);
          double exact = 0.0, mag = 0.0;
          for (int64_t k = 0; k < n; ++k) {
            exact += static_cast<double>(wf[k]) * af[k];
            mag += std::fabs(static_cast<double>(wf[k]) * af[k]);
          }
          double bound = 2e-6 * mag + 1e-30;
          if (at == GgmlType::Q8_1) {
            for (int64_t b = 0; b < n / 32; ++b) {
              const float m =
                  fp16_to_fp32(get_u16(w.data() + r * wb + b * traits(t).block_bytes + 2));
              const float sa = fp16_to_fp32(get_u16(a.data() + s * ab + b * 36 + 2));
              bound += std::fabs(m * sa) * std::ldexp(1.0, -10);
            }
          }
          const float got = quant_dot(t, w.data() + r * wb, a.data() + s * ab, n, CpuPath::Scalar);
          EXPECT_NEAR(got, exact, bound)
              << type_name(t) << " n=" << n << " row " << r << " act " << s;
        }
      }
    }
  }
}

// Every SIMD path against the scalar reference, every type, bit for bit: a
// 9 x 6 tile (mixed micro-kernel shapes) and single dot products.
TEST(QuantDot, SimdPathsAreBitIdenticalToScalar) {
  const auto paths = simd_paths();
  if (paths.empty()) GTEST_SKIP() << "no SIMD path on this machine";
  std::mt19937 rng(3);
  for (GgmlType t : kWeightTypes) {
    const GgmlType at = *dot_activation_type(t);
    for (int64_t n : lengths(t)) {
      const int rows = 9, acts = 6;
      const auto w = random_weights(t, rows, n, rng);
      const auto a = random_activations(t, acts, n, rng);
      const size_t wb = row_bytes(t, n), ab = row_bytes(at, n);
      std::vector<float> ref(rows * acts), got(rows * acts);
      quant_dot_tile(t, w.data(), wb, rows, a.data(), ab, acts, n, ref.data(), rows,
                     CpuPath::Scalar);
      for (CpuPath p : paths) {
        std::fill(got.begin(), got.end(), -1.0f);
        quant_dot_tile(t, w.data(), wb, rows, a.data(), ab, acts, n, got.data(), rows, p);
        for (int i = 0; i < rows * acts; ++i) {
          ASSERT_EQ(std::memcmp(&ref[i], &got[i], 4), 0)
              << type_name(t) << " n=" << n << " " << cpu_path_name(p) << " row " << i % rows
              << " act " << i / rows << ": " << ref[i] << " vs " << got[i];
        }
        const float one = quant_dot(t, w.data() + 5 * wb, a.data() + 3 * ab, n, p);
        EXPECT_EQ(std::memcmp(&one, &ref[3 * rows + 5], 4), 0)
            << type_name(t) << " " << cpu_path_name(p);
      }
    }
  }
}

// Every tile shape (each micro-kernel size and remainder) gives the same bits
// as one dot product at a time, and writes nothing outside its rows x acts
// block of `out` (ldo leaves a gap after each activation's rows). Legacy
// types go past two 16-row groups (the last one padded) and one 8-activation
// tile with every remainder. K-quants
// run past two groups of the AVX-512 micro-kernel (4 rows x 6 activations):
// rows 1..9 and activations 1..13 reach every group size and remainder.
TEST(QuantDot, EveryTileShapeMatchesSingleDots) {
  struct Case {
    GgmlType type;
    int64_t n;
    int max_rows, max_acts;
  };
  std::vector<Case> cases = {
      {GgmlType::Q4_1, 576, 35, 10}, {GgmlType::Q8_0, 576, 35, 10}, {GgmlType::Q5_0, 576, 35, 10}};
  for (GgmlType t :
       {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    cases.push_back({t, 768, 9, 13});
    cases.push_back({t, 2048, 9, 13});
  }
  std::mt19937 rng(4);
  const float kUnwritten = -12345.0f;
  for (const Case& c : cases) {
    const GgmlType t = c.type, at = *dot_activation_type(t);
    const auto w = random_weights(t, c.max_rows, c.n, rng);
    const auto a = random_activations(t, c.max_acts, c.n, rng);
    const size_t wb = row_bytes(t, c.n), ab = row_bytes(at, c.n);
    std::vector<float> one(c.max_rows * c.max_acts);  // [act][row]
    for (int s = 0; s < c.max_acts; ++s)
      for (int r = 0; r < c.max_rows; ++r)
        one[s * c.max_rows + r] =
            quant_dot(t, w.data() + r * wb, a.data() + s * ab, c.n, CpuPath::Scalar);
    for (CpuPath p : {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512}) {
      if (!cpu_path_supported(p)) continue;
      for (int rows = 1; rows <= c.max_rows; ++rows) {
        for (int acts = 1; acts <= c.max_acts; ++acts) {
          const int64_t ldo = rows + 1;
          std::vector<float> out(acts * ldo, kUnwritten);
          quant_dot_tile(t, w.data(), wb, rows, a.data(), ab, acts, c.n, out.data(), ldo, p);
          for (int s = 0; s < acts; ++s) {
            for (int r = 0; r < rows; ++r) {
              ASSERT_EQ(std::memcmp(&one[s * c.max_rows + r], &out[s * ldo + r], 4), 0)
                  << type_name(t) << " n=" << c.n << " " << cpu_path_name(p) << " tile " << rows
                  << "x" << acts << " row " << r << " act " << s;
            }
            ASSERT_EQ(out[s * ldo + rows], kUnwritten)
                << type_name(t) << " " << cpu_path_name(p) << " tile " << rows << "x" << acts
                << " wrote past its rows";
          }
        }
      }
    }
  }
}

// Q8_K rows at the extremes of int8: row s % 4 is all -128, all 127,
// alternating -128 / 127 by element, or by 16-element sub-block; d = 1 or
// 1/2; bsums the exact sums. (-128 never comes out of the quantizer but is a
// valid byte.)
std::vector<uint8_t> extreme_q8_k(int64_t n_act, int64_t n) {
  const size_t rb = row_bytes(GgmlType::Q8_K, n);
  std::vector<uint8_t> a(n_act * rb);
  for (int64_t s = 0; s < n_act; ++s) {
    for (int64_t b = 0; b < n / 256; ++b) {
      uint8_t* blk = a.data() + s * rb + b * 292;
      const float d = s < 4 ? 1.0f : 0.5f;
      std::memcpy(blk, &d, 4);
      int16_t bsums[16] = {};
      for (int k = 0; k < 256; ++k) {
        const bool low =
            s % 4 == 0 || (s % 4 == 2 && k % 2 == 0) || (s % 4 == 3 && k / 16 % 2 == 0);
        const int8_t q = low ? -128 : 127;
        blk[4 + k] = static_cast<uint8_t>(q);
        bsums[k / 16] = static_cast<int16_t>(bsums[k / 16] + q);
      }
      std::memcpy(blk + 260, bsums, sizeof(bsums));
    }
  }
  return a;
}

// The worst case for the integer sums (where vpmaddubsw's int16 sums would
// saturate, or an int32 lane overflow): every code, sub-block scale and min
// at an extreme against activations of -128 and 127. Every path gives the
// scalar reference's bits, and the reference is the dequantized sum.
TEST(QuantDot, KQuantExtremeCodesAndScalesMatchScalar) {
  const int64_t n = 512;
  const int rows = 6, acts = 8;
  const auto a = extreme_q8_k(acts, n);
  const size_t ab = row_bytes(GgmlType::Q8_K, n);
  for (GgmlType t :
       {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    const auto w = test::extreme_kquant_weights(t, rows, n);
    const size_t wb = row_bytes(t, n);
    std::vector<float> ref(rows * acts);
    quant_dot_tile(t, w.data(), wb, rows, a.data(), ab, acts, n, ref.data(), rows, CpuPath::Scalar);
    std::vector<float> wf(n), af(n);
    for (int r = 0; r < rows; ++r) {
      dequantize_row(t, w.data() + r * wb, wf.data(), n);
      for (int s = 0; s < acts; ++s) {
        dequantize_row(GgmlType::Q8_K, a.data() + s * ab, af.data(), n);
        double exact = 0.0, mag = 0.0;
        for (int64_t k = 0; k < n; ++k) {
          exact += static_cast<double>(wf[k]) * af[k];
          mag += std::fabs(static_cast<double>(wf[k]) * af[k]);
        }
        EXPECT_NEAR(ref[s * rows + r], exact, 2e-6 * mag + 1e-30)
            << type_name(t) << " row " << r << " act " << s;
      }
    }
    for (CpuPath p : simd_paths()) {
      std::vector<float> got(rows * acts, -1.0f);
      quant_dot_tile(t, w.data(), wb, rows, a.data(), ab, acts, n, got.data(), rows, p);
      for (int i = 0; i < rows * acts; ++i) {
        ASSERT_EQ(std::memcmp(&ref[i], &got[i], 4), 0)
            << type_name(t) << " " << cpu_path_name(p) << " row " << i % rows << " act " << i / rows
            << ": " << ref[i] << " vs " << got[i];
      }
    }
  }
}

// --- planar rows (model/ops/planar.h) ---------------------------------------------

const GgmlType kPlanarTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                 GgmlType::Q8_0};

std::vector<uint8_t> planar_copy(GgmlType t, const std::vector<uint8_t>& w, int64_t rows,
                                 int64_t n) {
  const size_t rb = row_bytes(t, n);
  std::vector<uint8_t> p(w.size());
  for (int64_t r = 0; r < rows; ++r) to_planar_row(t, w.data() + r * rb, p.data() + r * rb, n);
  return p;
}

TEST(PlanarRows, RoundTripIsExactAndLayoutIsAsDocumented) {
  std::mt19937 rng(11);
  for (GgmlType t : kPlanarTypes) {
    ASSERT_TRUE(has_planar_layout(t));
    for (int64_t n : lengths(t)) {
      const auto w = random_weights(t, 3, n, rng);
      const auto p = planar_copy(t, w, 3, n);
      std::vector<uint8_t> back(w.size());
      const size_t rb = row_bytes(t, n);
      for (int r = 0; r < 3; ++r) from_planar_row(t, p.data() + r * rb, back.data() + r * rb, n);
      ASSERT_EQ(back, w) << type_name(t) << " n=" << n;
      ASSERT_NE(p, w) << type_name(t) << " n=" << n;
    }
  }
  // Q4_1, 3 blocks: block 1's codes at 16..31, its d at 48 + 2, its m at 54 + 2.
  std::vector<uint8_t> g(60), q(60);
  for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<uint8_t>(i);
  to_planar_row(GgmlType::Q4_1, g.data(), q.data(), 96);
  EXPECT_EQ(q[16], 24);  // block 1 starts at 20: d 20-21, m 22-23, qs 24..
  EXPECT_EQ(q[31], 39);
  EXPECT_EQ(q[50], 20);
  EXPECT_EQ(q[51], 21);
  EXPECT_EQ(q[56], 22);
  // Q8_0, 5 blocks: quad 0 = lows of blocks 0-3 then their highs; block 4
  // (a quad of one) follows at 128; codes stored + 128; d plane at 160.
  std::vector<uint8_t> h(170), z(170);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint8_t>(i);
  to_planar_row(GgmlType::Q8_0, h.data(), z.data(), 160);
  EXPECT_EQ(z[16], (34 + 2) ^ 0x80);                 // block 1, element 0
  EXPECT_EQ(z[64], (0 + 2 + 16) ^ 0x80);             // block 0, element 16
  EXPECT_EQ(z[128 + 16], (4 * 34 + 2 + 16) ^ 0x80);  // block 4, element 16
  EXPECT_EQ(z[160 + 2], 34);                         // d of block 1
  // Q5_0, 3 blocks ({d, qh[4], qs[16]}, 22 B): codes, then the qh plane at
  // 48, then the d plane at 60.
  std::vector<uint8_t> f(66), v(66);
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<uint8_t>(i);
  to_planar_row(GgmlType::Q5_0, f.data(), v.data(), 96);
  EXPECT_EQ(v[16], 22 + 6);       // block 1, first code byte
  EXPECT_EQ(v[48 + 4], 22 + 2);   // block 1, first qh byte
  EXPECT_EQ(v[48 + 11], 44 + 5);  // block 2, last qh byte
  EXPECT_EQ(v[60 + 2], 22);       // d of block 1
}

// --- interleaved groups (model/ops/interleave.h) -----------------------------

std::vector<uint8_t> interleaved_copy(GgmlType t, const std::vector<uint8_t>& w, int64_t rows,
                                      int64_t n) {
  const size_t rb = row_bytes(t, n), group = kInterleaveRows * rb;
  std::vector<uint8_t> p(w.size());
  for (int64_t g = 0; g < rows / kInterleaveRows; ++g)
    to_interleaved(t, w.data() + g * group, rb, p.data() + g * group, n);
  return p;
}

TEST(InterleavedRows, RoundTripIsExactAndLayoutIsAsDocumented) {
  std::mt19937 rng(13);
  for (GgmlType t : kPlanarTypes) {
    ASSERT_TRUE(has_interleaved_layout(t));
    for (int64_t n : lengths(t)) {
      const auto w = random_weights(t, 32, n, rng);
      const auto p = interleaved_copy(t, w, 32, n);
      std::vector<uint8_t> back(w.size(), 0xAA);
      const size_t rb = row_bytes(t, n), group = kInterleaveRows * rb;
      for (int g = 0; g < 2; ++g)
        from_interleaved(t, p.data() + g * group, back.data() + g * group, rb, n);
      ASSERT_EQ(back, w) << type_name(t) << " n=" << n;
      ASSERT_NE(p, w) << type_name(t) << " n=" << n;
    }
  }
  // Byte i of the GGUF rows = i % 251, two blocks per row (n = 64).
  auto fill = [](GgmlType t) {
    std::vector<uint8_t> g(kInterleaveRows * row_bytes(t, 64));
    for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<uint8_t>(i % 251);
    return g;
  };
  {  // Q4_1 (20 B blocks, rows of 40 B): group block 1 at 320; chunk j, row r
     // at 64 j + 4 r holds qs[4j..4j+3] of the row's block; d at 256 + 2 r, m at 288 + 2 r.
    const auto g = fill(GgmlType::Q4_1);
    std::vector<uint8_t> q(g.size());
    to_interleaved(GgmlType::Q4_1, g.data(), 40, q.data(), 64);
    EXPECT_EQ(q[64 * 2 + 4 * 3 + 1], (3 * 40 + 4 + 9) % 251);  // row 3, block 0, qs[9]
    EXPECT_EQ(q[320 + 64 * 3 + 4 * 15 + 3],
              (15 * 40 + 20 + 4 + 15) % 251);                      // row 15, block 1, qs[15]
    EXPECT_EQ(q[256 + 2 * 5], (5 * 40) % 251);                     // row 5's d
    EXPECT_EQ(q[320 + 288 + 2 * 7 + 1], (7 * 40 + 20 + 3) % 251);  // row 7, block 1, m's high byte
  }
  {  // Q8_0 (34 B): 8 chunks, codes + 128; d at 512 + 2 r.
    const auto g = fill(GgmlType::Q8_0);
    std::vector<uint8_t> q(g.size());
    to_interleaved(GgmlType::Q8_0, g.data(), 68, q.data(), 64);
    EXPECT_EQ(q[64 * 7 + 4 * 2 + 3], ((2 * 68 + 2 + 31) % 251) ^ 0x80);  // row 2, element 31
    EXPECT_EQ(q[512 + 2 * 9], (9 * 68) % 251);                           // row 9's d
  }
  {  // Q5_0 (22 B): 5th bits of row r, element 4j+k at bit 4r+k of chunk j's
     // low mask (256 + 16 j), elements 16+4j+k in its high mask (+8).
    std::vector<uint8_t> g(kInterleaveRows * 44, 0), q(g.size());
    const uint32_t qh = (1u << 6) | (1u << 21);  // elements 6 (j 1, k 2) and 21 (j 1, k 1, high)
    std::memcpy(g.data() + 5 * 44 + 2, &qh, 4);  // row 5, block 0
    to_interleaved(GgmlType::Q5_0, g.data(), 44, q.data(), 64);
    uint64_t lo, hi;
    std::memcpy(&lo, q.data() + 256 + 16, 8);
    std::memcpy(&hi, q.data() + 256 + 24, 8);
    EXPECT_EQ(lo, uint64_t{1} << (4 * 5 + 2));
    EXPECT_EQ(hi, uint64_t{1} << (4 * 5 + 1));
  }
}

// Every path with an interleaved kernel, 1-3 groups and 1-17 activations
// (two tiles of 8 and every remainder), against the scalar reference on the
// GGUF rows, bit for bit.
TEST(InterleavedRows, KernelsAreBitIdenticalToScalarOnGgufRows) {
  std::mt19937 rng(12);
  int checked = 0;
  for (GgmlType t : kPlanarTypes) {
    const GgmlType at = *dot_activation_type(t);
    for (int64_t n : lengths(t)) {
      const int max_rows = 3 * static_cast<int>(kInterleaveRows), max_acts = 17;
      const auto w = random_weights(t, max_rows, n, rng);
      const auto p = interleaved_copy(t, w, max_rows, n);
      const auto a = random_activations(t, max_acts, n, rng);
      const size_t wb = row_bytes(t, n), ab = row_bytes(at, n);
      std::vector<float> ref(max_rows * max_acts);
      quant_dot_tile(t, w.data(), wb, max_rows, a.data(), ab, max_acts, n, ref.data(), max_rows,
                     CpuPath::Scalar);
      for (CpuPath path : {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512}) {
        if (!has_interleaved_kernel(t, path)) continue;
        for (int rows = 16; rows <= max_rows; rows += 16) {
          for (int acts = 1; acts <= max_acts; ++acts) {
            std::vector<float> got(rows * acts, -1.0f);
            quant_dot_tile_interleaved(t, p.data(), wb, rows, a.data(), ab, acts, n, got.data(),
                                       rows, path);
            ++checked;
            for (int s = 0; s < acts; ++s)
              for (int r = 0; r < rows; ++r)
                ASSERT_EQ(std::memcmp(&ref[s * max_rows + r], &got[s * rows + r], 4), 0)
                    << type_name(t) << " n=" << n << " " << cpu_path_name(path) << " tile " << rows
                    << "x" << acts << " row " << r << " act " << s;
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no interleaved kernel on this machine";
}

// The per-block activation figures the interleaved kernels broadcast: the
// AVX2 version (what the kernels call) equals the plain loop, bytes of -128
// and 127 included.
TEST(InterleavedRows, ActivationFiguresMatchThePlainLoop) {
  if (!cpu_path_supported(CpuPath::Avx2)) GTEST_SKIP() << "no AVX2 on this machine";
  std::mt19937 rng(15);
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1}) {
    const bool min = t == GgmlType::Q4_1;
    const int64_t n = 576, acts = 9;
    auto a = random_activations(t, acts, n, rng);
    const size_t ab = row_bytes(*dot_activation_type(t), n), bb = min ? 36 : 34;
    for (int64_t b = 0; b < n / 32; ++b) {  // row 0: extreme codes
      for (int k = 0; k < 32; ++k) a[b * bb + (min ? 4 : 2) + k] = k % 3 ? 0x80 : 0x7F;
    }
    qdot::il::ActFigures plain, simd;
    qdot::il::act_figures(min, a.data(), ab, acts, n / 32, plain);
    qdot::il::act_figures_avx2(min, a.data(), ab, acts, n / 32, simd);
    ASSERT_EQ(plain.stride, simd.stride);
    ASSERT_EQ(0,
              std::memcmp(plain.data.data(), simd.data.data(), plain.stride * acts * sizeof(float)))
        << type_name(t);
    EXPECT_EQ(plain.negsum(0, n / 32)[0], -(21 * -128 + 11 * 127));
  }
}

// The integer sums at their extremes: every code at its largest or smallest
// value (Q8_0 -128 and 127, nibbles 0 and 15, 5th bits all set), scales 1,
// against activations of -127 and 127 (the quantizer's range). The sign
// trick of the AVX2 Q8_0 kernel and the int16 sums of pmaddubsw must not
// saturate; every path gives the scalar bits, and the scalar reference is the
// exact integer sum (scales 1 make every float step exact).
TEST(InterleavedRows, ExtremeCodesMatchScalarAndExactSums) {
  const int64_t n = 256;
  const int rows = 32, acts = 4;
  for (GgmlType t : kPlanarTypes) {
    const GgmlType at = *dot_activation_type(t);
    const size_t wb = row_bytes(t, n), ab = row_bytes(at, n), bb = traits(t).block_bytes;
    std::vector<uint8_t> w(rows * wb, 0), a(acts * ab, 0);
    const uint16_t one = 0x3C00;  // f16 1.0
    for (int r = 0; r < rows; ++r) {
      for (int64_t b = 0; b < n / 32; ++b) {
        uint8_t* blk = w.data() + r * wb + b * bb;
        std::memcpy(blk, &one, 2);  // d; m (Q4_1 / Q5_1) stays 0
        const bool high = r % 2 == 0;
        if (t == GgmlType::Q8_0) {
          std::memset(blk + 2, high ? 0x7F : 0x80, 32);
        } else {
          const size_t qs = bb - 16;
          std::memset(blk + qs, high ? 0xFF : 0x00, 16);
          if (t == GgmlType::Q5_0 || t == GgmlType::Q5_1) std::memset(blk + qs - 4, 0xFF, 4);
        }
      }
    }
    for (int s = 0; s < acts; ++s) {
      for (int64_t b = 0; b < n / 32; ++b) {
        uint8_t* blk = a.data() + s * ab + b * (ab / (n / 32));
        std::memcpy(blk, &one, 2);
        const size_t qs = at == GgmlType::Q8_1 ? 4 : 2;
        for (int k = 0; k < 32; ++k)
          blk[qs + k] = static_cast<uint8_t>(static_cast<int8_t>(s % 2 == 0 || k % 2 ? 127 : -127));
      }
    }
    std::vector<float> ref(rows * acts);
    quant_dot_tile(t, w.data(), wb, rows, a.data(), ab, acts, n, ref.data(), rows, CpuPath::Scalar);
    for (int r = 0; r < rows; ++r) {
      for (int s = 0; s < acts; ++s) {
        int64_t exact = 0;
        std::vector<float> wf(n), af(n);
        dequantize_row(t, w.data() + r * wb, wf.data(), n);
        dequantize_row(at, a.data() + s * ab, af.data(), n);
        for (int64_t k = 0; k < n; ++k)
          exact += static_cast<int64_t>(wf[k]) * static_cast<int64_t>(af[k]);
        ASSERT_EQ(ref[s * rows + r], static_cast<float>(exact))
            << type_name(t) << " row " << r << " act " << s;
      }
    }
    const auto p = interleaved_copy(t, w, rows, n);
    for (CpuPath path : simd_paths()) {
      std::vector<float> got(rows * acts, -1.0f), il(rows * acts, -1.0f);
      quant_dot_tile(t, w.data(), wb, rows, a.data(), ab, acts, n, got.data(), rows, path);
      if (has_interleaved_kernel(t, path))
        quant_dot_tile_interleaved(t, p.data(), wb, rows, a.data(), ab, acts, n, il.data(), rows,
                                   path);
      for (int i = 0; i < rows * acts; ++i) {
        ASSERT_EQ(std::memcmp(&ref[i], &got[i], 4), 0)
            << type_name(t) << " " << cpu_path_name(path) << " GGUF rows, row " << i % rows;
        if (has_interleaved_kernel(t, path))
          ASSERT_EQ(std::memcmp(&ref[i], &il[i], 4), 0)
              << type_name(t) << " " << cpu_path_name(path) << " interleaved, row " << i % rows;
      }
    }
  }
}

TEST(QuantDot, ActivationTypesFollowGgml) {
  EXPECT_EQ(dot_activation_type(GgmlType::Q4_0), GgmlType::Q8_0);
  EXPECT_EQ(dot_activation_type(GgmlType::Q5_0), GgmlType::Q8_0);
  EXPECT_EQ(dot_activation_type(GgmlType::Q8_0), GgmlType::Q8_0);
  EXPECT_EQ(dot_activation_type(GgmlType::Q4_1), GgmlType::Q8_1);
  EXPECT_EQ(dot_activation_type(GgmlType::Q5_1), GgmlType::Q8_1);
  for (GgmlType k :
       {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K})
    EXPECT_EQ(dot_activation_type(k), GgmlType::Q8_K);
  for (GgmlType p : {GgmlType::F32, GgmlType::F16, GgmlType::BF16})
    EXPECT_EQ(dot_activation_type(p), GgmlType::F32);
  EXPECT_FALSE(dot_activation_type(GgmlType::F64).has_value());
  EXPECT_FALSE(dot_activation_type(GgmlType::Q8_K).has_value());
}

// KVBENCH_CPU forces a path; bad values are input errors naming the variable.
TEST(CpuPathChoice, EnvironmentVariableForcesAPath) {
  const char* old = std::getenv("KVBENCH_CPU");
  const std::string saved = old ? old : "";
  setenv("KVBENCH_CPU", "scalar", 1);
  EXPECT_EQ(default_cpu_path(), CpuPath::Scalar);
  setenv("KVBENCH_CPU", "avx3", 1);
  try {
    default_cpu_path();
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("KVBENCH_CPU"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("avx3"), std::string::npos) << e.what();
  }
  unsetenv("KVBENCH_CPU");
  EXPECT_EQ(default_cpu_path(), best_cpu_path());
  EXPECT_TRUE(cpu_path_supported(CpuPath::Scalar));
  if (old) setenv("KVBENCH_CPU", saved.c_str(), 1);
}

}  // namespace
}  // namespace kvbench
