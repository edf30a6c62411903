// Shared by the microbenchmark files (bench_matmul.cpp, bench_kernels.cpp):
// the paths, the weight types and the random rows they run on.
//
// Every buffer of rows starts at a 64-byte boundary, as the model loader
// places its weight copies (model/llama_weights.cpp): the kernels load whole
// 64-byte chunks, and where malloc happened to put a buffer moved their
// timings by up to 7% (BM_DotInterleaved, Q4_1 x8, same instructions).
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <random>
#include <vector>

#include "model/gguf/ggml_types.h"
#include "model/ops/interleave.h"
#include "model/ops/planar.h"
#include "model/ops/quant_dot.h"

namespace kvbench::bench {

// std::allocator with 64-byte alignment.
template <class T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U>
  Aligned64(const Aligned64<U>&) {}
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}));
  }
  void deallocate(T* p, size_t) { ::operator delete (p, std::align_val_t{64}); }
  bool operator==(const Aligned64&) const { return true; }
};
using Bytes = std::vector<uint8_t, Aligned64<uint8_t>>;

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
inline Bytes random_rows(GgmlType t, int64_t rows, int64_t cols) {
  const size_t rb = row_bytes(t, cols);
  Bytes bytes(rows * rb);
  const auto x = gaussian(64 * cols, 0.05f, 1);
  for (int64_t r = 0; r < rows; ++r)
    quantize_row(t, x.data() + (r % 64) * cols, bytes.data() + r * rb, cols);
  return bytes;
}

// The planar copy (model/ops/planar.h) of `rows` GGUF rows of type t.
inline Bytes planar_rows(GgmlType t, const Bytes& gguf, int64_t rows, int64_t cols) {
  const size_t rb = row_bytes(t, cols);
  Bytes planar(gguf.size());
  for (int64_t r = 0; r < rows; ++r) to_planar_row(t, &gguf[r * rb], &planar[r * rb], cols);
  return planar;
}

// The interleaved copy (model/ops/interleave.h) of `rows` (a multiple of 16)
// GGUF rows of type t.
inline Bytes interleaved_rows(GgmlType t, const Bytes& gguf, int64_t rows, int64_t cols) {
  const size_t group = kInterleaveRows * row_bytes(t, cols);
  Bytes il(gguf.size());
  for (int64_t g = 0; g < rows / kInterleaveRows; ++g)
    to_interleaved(t, &gguf[g * group], group / kInterleaveRows, &il[g * group], cols);
  return il;
}

// n_act random rows of n elements in the activation type of weight type t
// (row_bytes(*dot_activation_type(t), n) bytes apart).
inline Bytes random_activations(GgmlType t, int64_t n_act, int64_t n, uint32_t seed) {
  const GgmlType at = *dot_activation_type(t);
  const size_t ab = row_bytes(at, n);
  Bytes act(n_act * ab);
  const auto x = gaussian(n_act * n, 1.0f, seed);
  for (int64_t i = 0; i < n_act; ++i)
    quantize_activations(at, x.data() + i * n, act.data() + i * ab, n, CpuPath::Scalar);
  return act;
}

}  // namespace kvbench::bench
