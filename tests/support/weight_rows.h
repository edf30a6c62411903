// Weight rows for kernel tests: every weight type with a kernel, row lengths
// that reach every tail and remainder, and rows that hold every code pattern.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "model/gguf/ggml_types.h"
#include "model/ops/quant_dot.h"

namespace kvbench::test {

inline const GgmlType kWeightTypes[] = {
    GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
    GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
    GgmlType::F32,  GgmlType::F16,  GgmlType::BF16};

inline std::vector<CpuPath> simd_paths() {
  std::vector<CpuPath> p;
  for (CpuPath c : {CpuPath::Avx2, CpuPath::Avx512})
    if (cpu_path_supported(c)) p.push_back(c);
  return p;
}

inline bool is_kquant(GgmlType t) { return traits(t).block_size == 256; }
inline bool is_plain(GgmlType t) {
  return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16;
}

// Row lengths that cover: one block, an odd number of blocks (a half-filled
// last pair), more than one chunk of 16 blocks with a remainder, the model's
// 576 and 1536; for plain types tails of every length mod 16.
inline std::vector<int64_t> lengths(GgmlType t) {
  if (is_kquant(t)) return {256, 512, 1536};
  if (is_plain(t)) return {1, 7, 16, 17, 31, 40, 576};
  return {32, 96, 544, 576, 1056, 1536};
}

inline std::vector<float> gaussian(std::mt19937& rng, int64_t n, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Byte ranges of a block that hold f16 scales; everything else is codes.
inline std::vector<std::pair<int, int>> scale_fields(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::Q8_0:
      return {{0, 2}};
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
      return {{0, 2}, {2, 4}};
    case GgmlType::Q2_K:
      return {{80, 82}, {82, 84}};
    case GgmlType::Q3_K:
      return {{108, 110}};
    case GgmlType::Q6_K:
      return {{208, 210}};
    default:
      return {};
  }
}

// rows x n weights. Half the rows come from quantizing Gaussian data (what
// files hold); the other half are random bytes with finite random f16 scales,
// so every code pattern occurs (Q8_0's -128, all 6-bit K-quant scales, ...).
inline std::vector<uint8_t> random_weights(GgmlType t, int64_t rows, int64_t n, std::mt19937& rng) {
  const size_t rb = row_bytes(t, n);
  std::vector<uint8_t> w(rows * rb);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = w.data() + r * rb;
    if (r % 2 == 0 || is_plain(t)) {
      const auto x = gaussian(rng, n, 0.05f * (1 + r % 3));
      quantize_row(t, x.data(), row, n);
      continue;
    }
    std::uniform_int_distribution<int> byte(0, 255);
    for (size_t i = 0; i < rb; ++i) row[i] = static_cast<uint8_t>(byte(rng));
    std::uniform_real_distribution<float> mag(-3.0f, 0.5f);
    const size_t bb = traits(t).block_bytes;
    for (size_t b = 0; b < rb; b += bb) {
      for (auto [lo, hi] : scale_fields(t)) {
        const float s = std::pow(10.0f, mag(rng)) * (byte(rng) & 1 ? 1.0f : -1.0f);
        const uint16_t h = fp32_to_fp16(s);
        std::memcpy(row + b + lo, &h, hi - lo);
      }
    }
  }
  return w;
}

// Byte ranges of a K-quant super-block that hold the sub-block scales (and
// mins); codes are everything outside these and scale_fields().
inline std::pair<int, int> kquant_scale_bytes(GgmlType t) {
  switch (t) {
    case GgmlType::Q2_K:
      return {0, 16};
    case GgmlType::Q3_K:
      return {96, 108};
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
      return {4, 16};
    case GgmlType::Q6_K:
      return {192, 208};
    default:
      return {0, 0};
  }
}

// rows x n K-quant weights with every field at an extreme, the worst case
// for integer sums: row r has all code bytes 0x00 or 0xFF (r % 2: every code
// 0 or at its maximum, e.g. Q6_K values -32 / 31) and all scale bytes
// 0xFF, 0x80 or 0x7F ((r / 2) % 3: Q2_K..Q5_K every 4- or 6-bit scale and min
// at its maximum, or mixed high bits; Q6_K int8 scales -1, -128, 127). The
// f16 super-block scales are +-1 (the sign alternating by block).
inline std::vector<uint8_t> extreme_kquant_weights(GgmlType t, int64_t rows, int64_t n) {
  const size_t rb = row_bytes(t, n), bb = traits(t).block_bytes;
  const auto [s0, s1] = kquant_scale_bytes(t);
  const uint8_t kScale[3] = {0xFF, 0x80, 0x7F};
  std::vector<uint8_t> w(rows * rb);
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t b = 0; b < rb; b += bb) {
      uint8_t* blk = w.data() + r * rb + b;
      std::memset(blk, r % 2 ? 0xFF : 0x00, bb);
      std::memset(blk + s0, kScale[(r / 2) % 3], s1 - s0);
      const uint16_t h = fp32_to_fp16((b / bb) % 2 ? -1.0f : 1.0f);
      for (auto [lo, hi] : scale_fields(t)) std::memcpy(blk + lo, &h, hi - lo);
    }
  }
  return w;
}

}  // namespace kvbench::test
