// Dot products straight on quantized weights, the way GGUF runtimes compute
// them: each activation row is quantized once to 8-bit blocks (Q8_0, Q8_1 or
// Q8_K, chosen by the weight type), and a weight row is multiplied with it block
// by block: an integer dot product inside a block, a float scale per block. No
// f32 copy of the weights is ever made. F32/F16/BF16 weights are multiplied with
// f32 activations, converting the weights on the fly.
//
// Every kernel exists as a scalar reference (quant_dot_scalar.cpp, also the
// portable fallback) and, on x86-64, as AVX2 and AVX-512 (VNNI) versions chosen
// at run time. All paths evaluate the same float operations in the same order
// (integers inside a block are exact, so only the float order matters), so they
// give bit-identical results; the order is spelled out in quant_dot_scalar.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "model/gguf/ggml_types.h"

namespace kvbench {

// Instruction-set paths. Avx2 needs AVX2 + FMA + F16C; Avx512 needs
// AVX-512 F/BW/DQ/VL/VNNI (plus the Avx2 features).
enum class CpuPath { Scalar, Avx2, Avx512 };

std::string_view cpu_path_name(CpuPath path);  // "scalar", "avx2", "avx512"
bool cpu_path_supported(CpuPath path);         // compiled in and this CPU runs it
CpuPath best_cpu_path();
// KVBENCH_CPU=scalar|avx2|avx512 when set, else best_cpu_path(). Throws
// InputError naming KVBENCH_CPU for an unknown value or a path this CPU lacks.
CpuPath default_cpu_path();

// The activation format a weight type is multiplied with: Q8_0 (Q4_0, Q5_0,
// Q8_0), Q8_1 (Q4_1, Q5_1), Q8_K (Q2_K..Q6_K), F32 (F32, F16, BF16).
// nullopt: no quantized kernel for this weight type (F64, Q8_1, Q8_K) — callers
// use the exact f32 path.
std::optional<GgmlType> dot_activation_type(GgmlType weight);

// x[n] -> one row of `act` (row_bytes(act, n) bytes). Q8_0/Q8_1/Q8_K rows are
// bit-identical to quantize_row() (ggml's reference rounding); F32 copies.
void quantize_activations(GgmlType act, const float* x, void* dst, int64_t n, CpuPath path);

// One weight row (GGUF layout, n elements) times one activation row of type
// dot_activation_type(weight).
float quant_dot(GgmlType weight, const void* w_row, const void* act_row, int64_t n, CpuPath path);

// A tile of dot products: out[t * ldo + r] = quant_dot(row r, activation t)
// for r < n_rows, t < n_act. Rows are w_stride bytes apart, activation rows
// act_stride bytes apart. The SIMD paths keep a few weight rows in registers
// while they meet several activation rows; every output is bit-identical to
// quant_dot() whatever the tile shape.
void quant_dot_tile(GgmlType weight, const void* w, size_t w_stride, int64_t n_rows,
                    const void* act, size_t act_stride, int64_t n_act, int64_t n, float* out,
                    int64_t ldo, CpuPath path);

// Whether `path` has a kernel for interleaved groups (model/ops/interleave.h)
// of `weight`.
bool has_interleaved_kernel(GgmlType weight, CpuPath path);

// quant_dot_tile on interleaved groups: n_rows a multiple of 16, group g (rows
// 16g..16g+15) at w + 16 g w_stride, w_stride the GGUF row size. Bit-identical
// to quant_dot_tile on the same rows in GGUF layout. Only where
// has_interleaved_kernel(weight, path).
void quant_dot_tile_interleaved(GgmlType weight, const void* w, size_t w_stride, int64_t n_rows,
                                const void* act, size_t act_stride, int64_t n_act, int64_t n,
                                float* out, int64_t ldo, CpuPath path);

}  // namespace kvbench
