// Row codecs of the cache store: how one K or V row of head_dim floats is
// held in memory. Every codec stores real packed bytes (no f32 copy kept next
// to them); rows are decoded to f32 only into the attention's scratch.
//
//   f32   4 bytes / element, exact
//   f16   2 bytes / element, IEEE half, round to nearest even
//   bf16  2 bytes / element, bfloat16, round to nearest even
//   int8  1 byte / element + one f16 scale per group of G elements (symmetric,
//         absmax / 127); |x - x^| <= scale / 2
//   int4  1/2 byte / element + f16 (min, step) per group (asymmetric, 16
//         levels); |x - x^| <= step / 2
//   int2  1/4 byte / element + f16 (min, step) per group (asymmetric, 4
//         levels): KIVI's per-token value codec; |x - x^| <= step / 2
//
// The f16 scale / step is rounded up and the f16 minimum rounded down, so the
// codes always cover the group's range and the bounds above hold exactly
// (they are asserted by the property tests). Halves cover |x| <= 65504:
// larger K/V values overflow to infinity in f16 (and in int4 / int2 minimums).
#pragma once

#include <cstdint>
#include <string_view>

#include "model/ops/kv_cache.h"

namespace kvbench {

enum class CodecKind : uint8_t { F32, F16, BF16, Int8, Int4, Int2 };

std::string_view codec_name(CodecKind kind);

// The element type attention reads a codec's rows as, in place
// (model/ops/kv_cache.h: the layouts match byte for byte); every codec has one.
KvElement kv_element(CodecKind kind);

// Half-precision helpers. f32_to_f16 rounds to nearest even; the _up / _down
// variants round towards +inf / -inf (used for scales and minimums).
uint16_t f32_to_f16(float x);
uint16_t f32_to_f16_up(float x);
uint16_t f32_to_f16_down(float x);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float x);
float bf16_to_f32(uint16_t h);

// One codec for rows of `dim` elements with groups of `group` elements
// (group divides dim; ignored by f32 / f16 / bf16).
class RowCodec {
 public:
  RowCodec() = default;
  RowCodec(CodecKind kind, int dim, int group);

  CodecKind kind() const { return kind_; }
  int dim() const { return dim_; }
  int group() const { return group_; }
  bool exact() const { return kind_ == CodecKind::F32; }
  // Bytes of one encoded row: data + per-group parameters.
  int64_t row_bytes() const { return data_bytes_ + param_bytes_; }
  int64_t data_bytes() const { return data_bytes_; }    // codes (or raw elements)
  int64_t param_bytes() const { return param_bytes_; }  // scales / minimums

  // x: [dim] -> out: [row_bytes()]
  void encode(const float* x, uint8_t* out) const;
  // in: [row_bytes()] -> out: [dim]
  void decode(const uint8_t* in, float* out) const;
  // Largest |x - decode(encode(x))| the codec allows for this row (0 for f32;
  // for f16 / bf16 the half-ulp bound of the largest element).
  float error_bound(const float* x) const;

 private:
  CodecKind kind_ = CodecKind::F32;
  int dim_ = 0;
  int group_ = 0;
  int64_t data_bytes_ = 0;
  int64_t param_bytes_ = 0;
};

// KIVI's per-channel key quantization of one block of up to `group` tokens:
// for each channel, the (min, step) over the block's tokens, and each token's
// 2-bit codes packed 4 per byte.
struct KeyBlockParams {
  // [dim] f16 minimum and step per channel.
  static int64_t bytes(int dim) { return int64_t{dim} * 4; }
};
// keys: [n][dim] f32 -> params: [2][dim] f16 (min then step), codes: [n][dim / 4]
void kivi_encode_key_block(const float* keys, int n, int dim, uint16_t* params, uint8_t* codes);
// One token's key from its codes [dim / 4] and its block's params [2][dim].
void kivi_decode_key(const uint8_t* codes, const uint16_t* params, int dim, float* out);
// The per-channel bound (step / 2) of one block's params, for tests.
float kivi_key_error_bound(const uint16_t* params, int dim, int channel);

}  // namespace kvbench
