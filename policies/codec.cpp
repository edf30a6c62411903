#include "policies/codec.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>

#include "model/common/enum_names.h"

namespace kvbench {
namespace {

uint32_t bits_of(float x) { return std::bit_cast<uint32_t>(x); }
float float_of(uint32_t b) { return std::bit_cast<float>(b); }

// A row of 16-bit floats (f16, bf16): element i in bytes 2i and 2i + 1.
template <uint16_t (*kToHalf)(float)>
void encode_halves(const float* x, int n, uint8_t* out) {
  for (int i = 0; i < n; ++i) {
    const uint16_t h = kToHalf(x[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}
template <float (*kFromHalf)(uint16_t)>
void decode_halves(const uint8_t* in, int n, float* out) {
  for (int i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, in + 2 * i, 2);
    out[i] = kFromHalf(h);
  }
}

// Next half towards +inf / -inf (finite inputs).
uint16_t f16_next_up(uint16_t h) {
  if (h == 0x8000) return 0x0001;
  return (h & 0x8000) ? static_cast<uint16_t>(h - 1) : static_cast<uint16_t>(h + 1);
}
uint16_t f16_next_down(uint16_t h) {
  if (h == 0x0000) return 0x8001;
  return (h & 0x8000) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h - 1);
}

// Asymmetric (min, step) of `n` values with `levels` codes, f16-rounded so
// that min <= every value and min + (levels - 1) * step >= every value.
void asym_params(const float* x, int n, int stride, int levels, uint16_t& min_h, uint16_t& step_h) {
  float mn = x[0], mx = x[0];
  for (int i = 1; i < n; ++i) {
    mn = std::min(mn, x[int64_t{i} * stride]);
    mx = std::max(mx, x[int64_t{i} * stride]);
  }
  min_h = f32_to_f16_down(mn);
  const float m = f16_to_f32(min_h);
  step_h = f32_to_f16_up((mx - m) / static_cast<float>(levels - 1));
  // The division rounds; make sure the top code still reaches mx.
  while (m + static_cast<float>(levels - 1) * f16_to_f32(step_h) < mx) step_h = f16_next_up(step_h);
}

int asym_code(float x, float m, float s, int levels) {
  if (s == 0.0f) return 0;
  const float q = std::nearbyint((x - m) / s);
  if (std::isnan(q))
    return 0;  // a NaN (or inf - inf) element: code 0, never an undefined conversion
  return static_cast<int>(std::clamp(q, 0.0f, static_cast<float>(levels - 1)));
}

int bits_per_code(CodecKind k) {
  switch (k) {
    case CodecKind::Int8:
      return 8;
    case CodecKind::Int4:
      return 4;
    case CodecKind::Int2:
      return 2;
    default:
      return 0;
  }
}

}  // namespace

std::string_view codec_name(CodecKind kind) {
  static constexpr std::string_view names[] = {"f32", "f16", "bf16", "int8", "int4", "int2"};
  return enum_name<CodecKind::Int2>(kind, names, "?");
}

KvElement kv_element(CodecKind kind) {
  switch (kind) {
    case CodecKind::F32:
      return KvElement::F32;
    case CodecKind::F16:
      return KvElement::F16;
    case CodecKind::BF16:
      return KvElement::BF16;
    case CodecKind::Int8:
      return KvElement::Q8;
    case CodecKind::Int4:
      return KvElement::Q4;
    case CodecKind::Int2:
      return KvElement::Q2;
  }
  return KvElement::F32;
}

uint16_t f32_to_f16(float x) {
  uint32_t a = bits_of(x);
  const uint16_t sign = static_cast<uint16_t>((a >> 16) & 0x8000);
  a &= 0x7fffffff;
  if (a >= 0x7f800000) return sign | 0x7c00 | (a > 0x7f800000 ? 0x200 : 0);  // inf / nan
  if (a >= 0x477ff000) return sign | 0x7c00;  // rounds past the largest half
  if (a < 0x38800000) {
    // Below the smallest normal half: adding 0.5 puts the value's units of
    // 2^-24 in the low mantissa bits, and the FPU rounds to nearest even.
    const float f = float_of(a) + 0.5f;
    return sign | static_cast<uint16_t>(bits_of(f) - 0x3f000000u);
  }
  const uint32_t odd = (a >> 13) & 1;
  a += (static_cast<uint32_t>(15 - 127) << 23) + 0xfff + odd;
  return sign | static_cast<uint16_t>(a >> 13);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return float_of(sign | 0x7f800000 | (mant << 13));
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t f32_to_f16_up(float x) {
  uint16_t h = f32_to_f16(x);
  if (std::isfinite(x) && f16_to_f32(h) < x) h = f16_next_up(h);
  return h;
}

uint16_t f32_to_f16_down(float x) {
  uint16_t h = f32_to_f16(x);
  if (std::isfinite(x) && f16_to_f32(h) > x) h = f16_next_down(h);
  return h;
}

uint16_t f32_to_bf16(float x) {
  uint32_t b = bits_of(x);
  if ((b & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((b >> 16) | 0x40);  // quiet nan
  b += 0x7fff + ((b >> 16) & 1);
  return static_cast<uint16_t>(b >> 16);
}

float bf16_to_f32(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

RowCodec::RowCodec(CodecKind kind, int dim, int group) : kind_(kind), dim_(dim), group_(group) {
  switch (kind) {
    case CodecKind::F32:
      data_bytes_ = int64_t{dim} * 4;
      break;
    case CodecKind::F16:
    case CodecKind::BF16:
      data_bytes_ = int64_t{dim} * 2;
      break;
    case CodecKind::Int8:
      assert(group > 0 && dim % group == 0);
      data_bytes_ = dim;
      param_bytes_ = int64_t{dim / group} * 2;
      break;
    case CodecKind::Int4:
    case CodecKind::Int2: {
      assert(group > 0 && dim % group == 0);
      const int per_byte = 8 / bits_per_code(kind);
      assert(dim % per_byte == 0);
      data_bytes_ = dim / per_byte;
      param_bytes_ = int64_t{dim / group} * 4;
      break;
    }
  }
}

void RowCodec::encode(const float* x, uint8_t* out) const {
  switch (kind_) {
    case CodecKind::F32:
      std::memcpy(out, x, data_bytes_);
      return;
    case CodecKind::F16:
      encode_halves<f32_to_f16>(x, dim_, out);
      return;
    case CodecKind::BF16:
      encode_halves<f32_to_bf16>(x, dim_, out);
      return;
    case CodecKind::Int8: {
      uint8_t* params = out + data_bytes_;
      for (int g = 0; g < dim_ / group_; ++g) {
        const float* xg = x + g * group_;
        float amax = 0.0f;
        for (int i = 0; i < group_; ++i) amax = std::max(amax, std::fabs(xg[i]));
        const uint16_t scale_h = f32_to_f16_up(amax / 127.0f);
        std::memcpy(params + 2 * g, &scale_h, 2);
        const float s = f16_to_f32(scale_h);
        for (int i = 0; i < group_; ++i) {
          const float r = std::nearbyint(xg[i] / s);
          const float q =
              s > 0.0f && !std::isnan(r) ? std::clamp(r, -127.0f, 127.0f) : 0.0f;  // NaN: code 0
          out[g * group_ + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
        }
      }
      return;
    }
    case CodecKind::Int4:
    case CodecKind::Int2: {
      const int bits = bits_per_code(kind_);
      const int levels = 1 << bits;
      const int per_byte = 8 / bits;
      std::memset(out, 0, data_bytes_);
      uint8_t* params = out + data_bytes_;
      for (int g = 0; g < dim_ / group_; ++g) {
        uint16_t min_h, step_h;
        asym_params(x + g * group_, group_, 1, levels, min_h, step_h);
        std::memcpy(params + 4 * g, &min_h, 2);
        std::memcpy(params + 4 * g + 2, &step_h, 2);
        const float m = f16_to_f32(min_h), s = f16_to_f32(step_h);
        for (int i = 0; i < group_; ++i) {
          const int e = g * group_ + i;
          const int q = asym_code(x[e], m, s, levels);
          out[e / per_byte] |= static_cast<uint8_t>(q << (bits * (e % per_byte)));
        }
      }
      return;
    }
  }
}

void RowCodec::decode(const uint8_t* in, float* out) const {
  switch (kind_) {
    case CodecKind::F32:
      std::memcpy(out, in, data_bytes_);
      return;
    case CodecKind::F16:
      decode_halves<f16_to_f32>(in, dim_, out);
      return;
    case CodecKind::BF16:
      decode_halves<bf16_to_f32>(in, dim_, out);
      return;
    case CodecKind::Int8: {
      const uint8_t* params = in + data_bytes_;
      for (int g = 0; g < dim_ / group_; ++g) {
        uint16_t scale_h;
        std::memcpy(&scale_h, params + 2 * g, 2);
        const float s = f16_to_f32(scale_h);
        for (int i = 0; i < group_; ++i)
          out[g * group_ + i] = static_cast<float>(static_cast<int8_t>(in[g * group_ + i])) * s;
      }
      return;
    }
    case CodecKind::Int4:
    case CodecKind::Int2: {
      const int bits = bits_per_code(kind_);
      const int per_byte = 8 / bits;
      const int mask = (1 << bits) - 1;
      const uint8_t* params = in + data_bytes_;
      for (int g = 0; g < dim_ / group_; ++g) {
        uint16_t min_h, step_h;
        std::memcpy(&min_h, params + 4 * g, 2);
        std::memcpy(&step_h, params + 4 * g + 2, 2);
        const float m = f16_to_f32(min_h), s = f16_to_f32(step_h);
        for (int i = 0; i < group_; ++i) {
          const int e = g * group_ + i;
          const int q = (in[e / per_byte] >> (bits * (e % per_byte))) & mask;
          out[e] = m + static_cast<float>(q) * s;
        }
      }
      return;
    }
  }
}

float RowCodec::error_bound(const float* x) const {
  float amax = 0.0f;
  for (int i = 0; i < dim_; ++i) amax = std::max(amax, std::fabs(x[i]));
  // Float rounding of the (de)quantization arithmetic itself.
  const float slack = amax * 0x1.0p-21f + 0x1.0p-60f;
  switch (kind_) {
    case CodecKind::F32:
      return 0.0f;
    case CodecKind::F16:
      return amax * 0x1.0p-11f + 0x1.0p-25f;
    case CodecKind::BF16:
      return amax * 0x1.0p-8f + 0x1.0p-133f;
    case CodecKind::Int8: {
      float worst = 0.0f;
      for (int g = 0; g < dim_ / group_; ++g) {
        float gmax = 0.0f;
        for (int i = 0; i < group_; ++i) gmax = std::max(gmax, std::fabs(x[g * group_ + i]));
        worst = std::max(worst, 0.5f * f16_to_f32(f32_to_f16_up(gmax / 127.0f)));
      }
      return worst + slack;
    }
    case CodecKind::Int4:
    case CodecKind::Int2: {
      const int levels = 1 << bits_per_code(kind_);
      float worst = 0.0f;
      for (int g = 0; g < dim_ / group_; ++g) {
        uint16_t min_h, step_h;
        asym_params(x + g * group_, group_, 1, levels, min_h, step_h);
        worst = std::max(worst, 0.5f * f16_to_f32(step_h));
      }
      return worst + slack + std::fabs(amax) * 0x1.0p-20f;
    }
  }
  return 0.0f;
}

void kivi_encode_key_block(const float* keys, int n, int dim, uint16_t* params, uint8_t* codes) {
  assert(n >= 1 && dim % 4 == 0);
  std::memset(codes, 0, static_cast<size_t>(n) * (dim / 4));
  for (int c = 0; c < dim; ++c) {
    asym_params(keys + c, n, dim, 4, params[c], params[dim + c]);
    const float m = f16_to_f32(params[c]), s = f16_to_f32(params[dim + c]);
    for (int t = 0; t < n; ++t) {
      const int q = asym_code(keys[int64_t{t} * dim + c], m, s, 4);
      codes[int64_t{t} * (dim / 4) + c / 4] |= static_cast<uint8_t>(q << (2 * (c % 4)));
    }
  }
}

void kivi_decode_key(const uint8_t* codes, const uint16_t* params, int dim, float* out) {
  for (int c = 0; c < dim; ++c) {
    const int q = (codes[c / 4] >> (2 * (c % 4))) & 3;
    out[c] = f16_to_f32(params[c]) + static_cast<float>(q) * f16_to_f32(params[dim + c]);
  }
}

float kivi_key_error_bound(const uint16_t* params, int dim, int channel) {
  return 0.5f * f16_to_f32(params[dim + channel]);
}

}  // namespace kvbench
