// Shared by the microbenchmark files (bench_matmul.cpp, bench_kernels.cpp):
// the paths, the weight types and the random rows they run on.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "model/gguf/ggml_types.h"
#include "model/ops/interleave.h"
#include "model/ops/planar.h"
#include "model/ops/quant_dot.h"

namespace kvbench::bench {

// A benchmark's path argument: 0 scalar, 1 avx2, 2 avx512.
inline constexpr CpuPath kPaths[] = {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512};

// The weight types with a quantized kernel, in the order of BM_Dot's first
// argument.
inline constexpr GgmlType kDotTypes[] = {
    GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
    GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
    GgmlType::F32,  GgmlType::F16,  GgmlType::BF16};

inline std::vector<float> gaussian(int64_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline bool skip_unsupported(benchmark::State& state, CpuPath p) {
  if (cpu_path_supported(p)) return false;
  state.SkipWithError("path not supported on this CPU");
  return true;
}

// rows x cols of type t, GGUF layout: 64 distinct random rows, repeated.
inline std::vector<uint8_t> random_rows(GgmlType t, int64_t rows, int64_t cols) {
  const size_t rb = row_bytes(t, cols);
  std::vector<uint8_t> bytes(rows * rb);
  const auto x = gaussian(64 * cols, 0.05f, 1);
  for (int64_t r = 0; r < rows; ++r)
    quantize_row(t, x.data() + (r % 64) * cols, bytes.data() + r * rb, cols);
  return bytes;
}

// The planar copy (model/ops/planar.h) of `rows` GGUF rows of type t.
inline std::vector<uint8_t> planar_rows(GgmlType t, const std::vector<uint8_t>& gguf, int64_t rows,
                                        int64_t cols) {
  const size_t rb = row_bytes(t, cols);
  std::vector<uint8_t> planar(gguf.size());
  for (int64_t r = 0; r < rows; ++r) to_planar_row(t, &gguf[r * rb], &planar[r * rb], cols);
  return planar;
}

// The interleaved copy (model/ops/interleave.h) of `rows` (a multiple of 16)
// GGUF rows of type t.
inline std::vector<uint8_t> interleaved_rows(GgmlType t, const std::vector<uint8_t>& gguf,
                                             int64_t rows, int64_t cols) {
  const size_t group = kInterleaveRows * row_bytes(t, cols);
  std::vector<uint8_t> il(gguf.size());
  for (int64_t g = 0; g < rows / kInterleaveRows; ++g)
    to_interleaved(t, &gguf[g * group], group / kInterleaveRows, &il[g * group], cols);
  return il;
}

// n_act random rows of n elements in the activation type of weight type t
// (row_bytes(*dot_activation_type(t), n) bytes apart).
inline std::vector<uint8_t> random_activations(GgmlType t, int64_t n_act, int64_t n,
                                               uint32_t seed) {
  const GgmlType at = *dot_activation_type(t);
  const size_t ab = row_bytes(at, n);
  std::vector<uint8_t> act(n_act * ab);
  const auto x = gaussian(n_act * n, 1.0f, seed);
  for (int64_t i = 0; i < n_act; ++i)
    quantize_activations(at, x.data() + i * n, act.data() + i * ab, n, CpuPath::Scalar);
  return act;
}

}  // namespace kvbench::bench
