// GGML tensor element types: ids as in GGUF files, block layouts, and scalar
// reference (de)quantization. Fast kernels live elsewhere and are tested against
// these functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kvbench {

// Numeric ids are the on-disk GGUF/GGML type ids.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

struct TypeTraits {
  std::string_view name;  // "F32", "Q4_1", ... as llama.cpp prints them
  int64_t block_size;     // elements per block (1 for plain types)
  size_t block_bytes;     // bytes per block
  bool dequantizable;     // kvbench can turn it into f32
};

// Traits of a type id read from a file; nullopt for ids GGML never defined.
std::optional<TypeTraits> type_traits(uint32_t type_id);
const TypeTraits& traits(GgmlType type);  // for a known enum value
std::string_view type_name(GgmlType type);

// Bytes of a row of n elements; n must be a multiple of the block size
// (callers check with row_is_whole first).
bool row_is_whole(GgmlType type, int64_t n);
size_t row_bytes(GgmlType type, int64_t n);

// Scalar reference: src holds row_bytes(type, n) bytes -> dst[n] floats.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);
// Scalar reference quantizer (used by the GGUF writer for the tiny model and by
// tests): src[n] floats -> dst with row_bytes(type, n) bytes. Same rounding as
// ggml's reference quantizers.
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

// The 6-bit (scale, min) pair j (0..7) of a Q4_K / Q5_K super-block, from its
// 12 packed scale bytes (as ggml's get_scale_min_k4).
void k4_scale_min(int j, const uint8_t* scales, int* sc, int* m);

// IEEE half and bfloat16 conversions (round to nearest even).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);

}  // namespace kvbench
