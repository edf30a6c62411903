// Internal to quant_dot*.cpp: the kernel table each instruction-set path
// fills in, and helpers shared by the paths.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/gguf/ggml_types.h"

namespace kvbench::qdot {

// Weight types with a quantized kernel, as table indices.
enum WeightKind : int {
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ8_0,
  kQ2_K,
  kQ3_K,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  kF32,
  kF16,
  kBF16,
  kKinds
};

// -1 for types without a kernel.
int weight_kind(GgmlType type);

// x[n] -> quantized blocks.
using QuantizeFn = void (*)(const float* x, uint8_t* dst, int64_t n);
// out[t * ldo + r] = dot(weight row r, activation row t); see quant_dot_tile().
using TileFn = void (*)(const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* act,
                        size_t act_stride, int64_t n_act, int64_t n, float* out, int64_t ldo);

struct Kernels {
  QuantizeFn quantize_q8_0 = nullptr;
  QuantizeFn quantize_q8_1 = nullptr;
  QuantizeFn quantize_q8_k = nullptr;
  TileFn tile[kKinds] = {};
  // The same on interleaved groups of 16 rows (model/ops/interleave.h; n_rows
  // a multiple of 16, group g at w + 16 g w_stride); nullptr where none.
  TileFn interleaved_tile[kKinds] = {};
};

// Each returns nullptr when its path is not compiled in (non-x86 builds:
// simd_stubs.cpp).
const Kernels* scalar_kernels();
const Kernels* avx2_kernels();
const Kernels* avx512_kernels();

// The AVX-512 tile kernel of a K-quant kind (kQ2_K, kQ4_K, kQ5_K, kQ6_K;
// quant_dot_kquant_avx512.cpp), nullptr for other kinds and off x86-64.
TileFn kquant_avx512_tile(int kind);

// Fill the legacy kinds' tile and interleaved_tile entries
// (quant_dot_interleaved_*.cpp); nothing off x86-64.
namespace il {
void interleaved_avx2_kernels(Kernels& k);
void interleaved_avx512_kernels(Kernels& k);
}  // namespace il

// The block layouts the kernels read (bytes): legacy blocks hold 32 elements,
// K-quant super-blocks 256.
constexpr int kQK = 32;
constexpr int kQKK = 256;
constexpr size_t kQ8_0Bytes = 34;   // d (f16), qs[32]
constexpr size_t kQ8_1Bytes = 36;   // d (f16), s (f16) = d * sum(qs), qs[32]
constexpr size_t kQ8_KBytes = 292;  // d (f32), qs[256], bsums[16] (int16)

}  // namespace kvbench::qdot
