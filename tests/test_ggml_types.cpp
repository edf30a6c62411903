// Tests of model/ggml_types: the type table, f16/bf16 conversions, hand-built
// blocks of every dequantizable type (bytes written out here, expected values
// worked out by hand), and quantize -> dequantize round trips against each
// format's analytic error bound.

#include "model/gguf/ggml_types.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace kvbench {
namespace {

using Bytes = std::vector<uint8_t>;

std::vector<float> dequant(GgmlType type, const Bytes& bytes, int64_t n) {
  EXPECT_EQ(bytes.size(), row_bytes(type, n)) << type_name(type);
  std::vector<float> out(static_cast<size_t>(n), -12345.0f);
  dequantize_row(type, bytes.data(), out.data(), n);
  return out;
}

Bytes quant(GgmlType type, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  Bytes out(row_bytes(type, n), 0xCD);
  quantize_row(type, x.data(), out.data(), n);
  return out;
}

void append(Bytes& b, std::initializer_list<uint8_t> v) { b.insert(b.end(), v.begin(), v.end()); }
void append_u16(Bytes& b, uint16_t v) {
  append(b, {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8)});
}

float bits_to_float(uint32_t u) { return std::bit_cast<float>(u); }
uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }

// ===========================================================================
// Type table

TEST(GgmlTypes, TraitsOfEveryEnumerator) {
  struct Row {
    GgmlType type;
    uint32_t id;
    const char* name;
    int64_t block;
    size_t bytes;
    bool deq;
  };
  const Row rows[] = {
      {GgmlType::F32, 0, "F32", 1, 4, true},        {GgmlType::F16, 1, "F16", 1, 2, true},
      {GgmlType::Q4_0, 2, "Q4_0", 32, 18, true},    {GgmlType::Q4_1, 3, "Q4_1", 32, 20, true},
      {GgmlType::Q5_0, 6, "Q5_0", 32, 22, true},    {GgmlType::Q5_1, 7, "Q5_1", 32, 24, true},
      {GgmlType::Q8_0, 8, "Q8_0", 32, 34, true},    {GgmlType::Q8_1, 9, "Q8_1", 32, 36, true},
      {GgmlType::Q2_K, 10, "Q2_K", 256, 84, true},  {GgmlType::Q3_K, 11, "Q3_K", 256, 110, true},
      {GgmlType::Q4_K, 12, "Q4_K", 256, 144, true}, {GgmlType::Q5_K, 13, "Q5_K", 256, 176, true},
      {GgmlType::Q6_K, 14, "Q6_K", 256, 210, true}, {GgmlType::Q8_K, 15, "Q8_K", 256, 292, true},
      {GgmlType::I8, 24, "I8", 1, 1, false},        {GgmlType::I16, 25, "I16", 1, 2, false},
      {GgmlType::I32, 26, "I32", 1, 4, false},      {GgmlType::I64, 27, "I64", 1, 8, false},
      {GgmlType::F64, 28, "F64", 1, 8, true},       {GgmlType::BF16, 30, "BF16", 1, 2, true},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(static_cast<uint32_t>(r.type), r.id);
    const TypeTraits& t = traits(r.type);
    EXPECT_EQ(t.name, r.name);
    EXPECT_EQ(type_name(r.type), r.name);
    EXPECT_EQ(t.block_size, r.block);
    EXPECT_EQ(t.block_bytes, r.bytes);
    EXPECT_EQ(t.dequantizable, r.deq);
    const std::optional<TypeTraits> by_id = type_traits(r.id);
    ASSERT_TRUE(by_id.has_value());
    EXPECT_EQ(by_id->name, r.name);
    EXPECT_EQ(by_id->block_size, r.block);
    EXPECT_EQ(by_id->block_bytes, r.bytes);
    EXPECT_EQ(by_id->dequantizable, r.deq);
  }
}

TEST(GgmlTypes, OtherGgmlIdsAreKnownButNotDequantizable) {
  struct Row {
    uint32_t id;
    const char* name;
    int64_t block;
    size_t bytes;
  };
  const Row rows[] = {
      {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},  {18, "IQ3_XXS", 256, 98},
      {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
      {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {29, "IQ1_M", 256, 56},
      {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
      {40, "NVFP4", 64, 36},    {41, "Q1_0", 128, 18},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const std::optional<TypeTraits> t = type_traits(r.id);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->name, r.name);
    EXPECT_EQ(t->block_size, r.block);
    EXPECT_EQ(t->block_bytes, r.bytes);
    EXPECT_FALSE(t->dequantizable);
  }
}

TEST(GgmlTypes, UndefinedIdsAreNullopt) {
  // 4, 5: Q4_2 / Q4_3, and 31..33, 36..38: the interleaved repacks, all
  // removed from GGUF; 42 and up: not assigned.
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 42u, 43u, 100u, 255u, 256u, 0x80000000u,
                      0xFFFFFFFFu}) {
    EXPECT_FALSE(type_traits(id).has_value()) << id;
  }
}

TEST(GgmlTypes, RowBytesAndWholeness) {
  EXPECT_TRUE(row_is_whole(GgmlType::F32, 7));
  EXPECT_EQ(row_bytes(GgmlType::F32, 7), 28u);
  EXPECT_EQ(row_bytes(GgmlType::F16, 5), 10u);
  EXPECT_EQ(row_bytes(GgmlType::BF16, 3), 6u);
  EXPECT_EQ(row_bytes(GgmlType::F64, 2), 16u);
  EXPECT_EQ(row_bytes(GgmlType::I8, 3), 3u);

  EXPECT_TRUE(row_is_whole(GgmlType::Q4_0, 64));
  EXPECT_EQ(row_bytes(GgmlType::Q4_0, 64), 36u);
  EXPECT_FALSE(row_is_whole(GgmlType::Q4_0, 33));
  EXPECT_FALSE(row_is_whole(GgmlType::Q4_0, 16));
  EXPECT_EQ(row_bytes(GgmlType::Q8_0, 4096), 128u * 34u);

  EXPECT_TRUE(row_is_whole(GgmlType::Q4_K, 512));
  EXPECT_EQ(row_bytes(GgmlType::Q4_K, 512), 288u);
  EXPECT_FALSE(row_is_whole(GgmlType::Q4_K, 32));
  EXPECT_FALSE(row_is_whole(GgmlType::Q6_K, 4000));
  EXPECT_EQ(row_bytes(GgmlType::Q6_K, 4096), 16u * 210u);

  EXPECT_TRUE(row_is_whole(GgmlType::Q2_K, 0));
  EXPECT_EQ(row_bytes(GgmlType::Q2_K, 0), 0u);
  EXPECT_FALSE(row_is_whole(GgmlType::F32, -1));
  EXPECT_FALSE(row_is_whole(GgmlType::Q8_0, -32));
}

TEST(GgmlTypesDeathTest, DequantizingAnIntegerTypeAsserts) {
#ifdef NDEBUG
  GTEST_SKIP() << "asserts are compiled out";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const int32_t src[4] = {1, 2, 3, 4};
  float dst[4];
  EXPECT_DEATH(dequantize_row(GgmlType::I32, src, dst, 4), "dequantizable");
#endif
}

// ===========================================================================
// fp16

TEST(Fp16, KnownBitPatterns) {
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xC000);
  EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
  EXPECT_EQ(fp32_to_fp16(0.5f), 0x3800);
  EXPECT_EQ(fp32_to_fp16(0.25f), 0x3400);
  EXPECT_EQ(fp32_to_fp16(0.1f), 0x2E66);  // 0.0999755859375
  EXPECT_EQ(fp16_to_fp32(0x2E66), 0.0999755859375f);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);  // largest finite
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp32_to_fp16(-65504.0f), 0xFBFF);
  EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(float_bits(fp16_to_fp32(0x8000)), 0x80000000u);  // -0 keeps its sign
  EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));    // smallest normal
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -14)), 0x0400);
}

TEST(Fp16, Subnormals) {
  const float tiny = std::ldexp(1.0f, -24);  // smallest subnormal, 5.96e-8
  EXPECT_EQ(fp16_to_fp32(0x0001), tiny);
  EXPECT_EQ(fp32_to_fp16(tiny), 0x0001);
  EXPECT_EQ(fp16_to_fp32(0x8001), -tiny);
  EXPECT_EQ(fp16_to_fp32(0x03FF), 1023 * tiny);  // largest subnormal
  EXPECT_EQ(fp32_to_fp16(1023 * tiny), 0x03FF);
  EXPECT_EQ(fp16_to_fp32(0x0200), std::ldexp(1.0f, -15));
  // Halfway cases below the normal range round to even.
  EXPECT_EQ(fp32_to_fp16(0.5f * tiny), 0x0000);  // 2^-25: tie -> 0
  EXPECT_EQ(fp32_to_fp16(-0.5f * tiny), 0x8000);
  EXPECT_EQ(fp32_to_fp16(std::nextafter(0.5f * tiny, 1.0f)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(1.5f * tiny), 0x0002);     // tie between 1 and 2 -> 2
  EXPECT_EQ(fp32_to_fp16(2.5f * tiny), 0x0002);     // tie between 2 and 3 -> 2
  EXPECT_EQ(fp32_to_fp16(1023.5f * tiny), 0x0400);  // rounds up into the normals
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(Fp16, RoundingTiesToEven) {
  // Near 1.0 a half ulp is 2^-11.
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie, even stays
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie, odd rounds up
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11) - std::ldexp(1.0f, -20)), 0x3C00);
  EXPECT_EQ(fp32_to_fp16(-(1.0f + 3 * std::ldexp(1.0f, -11))), 0xBC02);
  // Mantissa carry into the exponent: 2 - 2^-12 is a tie between 0x3BFF and 2.0.
  EXPECT_EQ(fp32_to_fp16(2.0f - std::ldexp(1.0f, -12)), 0x4000);
  // Overflow: 65519.99 stays finite; 65520 is a tie that goes to "65536" = inf.
  EXPECT_EQ(fp32_to_fp16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-65520.0f), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::max()), 0x7C00);
}

TEST(Fp16, InfAndNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fp32_to_fp16(inf), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-inf), 0xFC00);
  EXPECT_EQ(fp16_to_fp32(0x7C00), inf);
  EXPECT_EQ(fp16_to_fp32(0xFC00), -inf);
  for (uint16_t h : {uint16_t{0x7E00}, uint16_t{0x7C01}, uint16_t{0xFE00}, uint16_t{0x7FFF}}) {
    EXPECT_TRUE(std::isnan(fp16_to_fp32(h))) << h;
  }
  // Any NaN stays a NaN (exponent all ones, mantissa non-zero), sign kept.
  for (uint32_t u : {0x7FC00000u, 0x7F800001u, 0xFFC00000u, 0x7F802000u, 0x7FFFFFFFu}) {
    const uint16_t h = fp32_to_fp16(bits_to_float(u));
    EXPECT_EQ(h & 0x7C00, 0x7C00) << std::hex << u;
    EXPECT_NE(h & 0x03FF, 0) << std::hex << u;
    EXPECT_EQ(h >> 15, u >> 31) << std::hex << u;
  }
}

// Value of a half computed straight from the IEEE definition, in double.
double fp16_value(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  const double mag = exp == 0 ? std::ldexp(man, -24) : std::ldexp(1024 + man, exp - 25);
  return sign ? -mag : mag;
}

TEST(Fp16, ExhaustiveDecodeAndRoundTrip) {
  for (uint32_t u = 0; u < 0x10000; ++u) {
    const auto h = static_cast<uint16_t>(u);
    const bool is_nan = (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
    if (is_nan) continue;
    const float f = fp16_to_fp32(h);
    if ((h & 0x7FFF) == 0x7C00) {
      EXPECT_TRUE(std::isinf(f));
    } else {
      ASSERT_EQ(static_cast<double>(f), fp16_value(h)) << std::hex << u;
    }
    ASSERT_EQ(fp32_to_fp16(f), h) << std::hex << u;
  }
}

// Reference float -> half by search: the two halves around |f| (the bit
// patterns of non-negative halves are ordered like their values), pick the
// nearer in exact double arithmetic, ties to the even pattern. 0x7C00 stands
// for 65536 when rounding, as IEEE says.
uint16_t fp16_reference(float f) {
  const double a = std::fabs(static_cast<double>(f));
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  auto value = [](uint16_t h) { return h == 0x7C00 ? 65536.0 : fp16_value(h); };
  if (a >= 65536.0) return sign | 0x7C00;
  uint16_t lo = 0, hi = 0x7C00;  // value(lo) <= a < value(hi)
  while (hi - lo > 1) {
    const auto mid = static_cast<uint16_t>((lo + hi) / 2);
    (value(mid) <= a ? lo : hi) = mid;
  }
  const double dlo = a - value(lo), dhi = value(hi) - a;
  const uint16_t r = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) ? hi : lo);
  return sign | r;
}

TEST(Fp16, EncodeMatchesReferenceOnASweepOfFloats) {
  // Every 4099th bit pattern plus all patterns near the interesting edges.
  std::vector<uint32_t> patterns;
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4099) patterns.push_back(static_cast<uint32_t>(u));
  for (uint32_t edge :
       {0x33000000u, 0x33800000u, 0x38800000u, 0x3F800000u, 0x477FE000u, 0x477FF000u}) {
    for (uint32_t d = 0; d < 0x4000; ++d) {
      patterns.push_back(edge + d - 0x2000);
      patterns.push_back((edge + d - 0x2000) | 0x80000000u);
    }
  }
  int checked = 0;
  for (uint32_t u : patterns) {
    const float f = bits_to_float(u);
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_fp16(f), fp16_reference(f)) << std::hex << u;
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
}

// ===========================================================================
// bf16

TEST(Bf16, KnownBitPatterns) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_fp32(0x3F80), 1.0f);
  EXPECT_EQ(fp32_to_bf16(-1.5f), 0xBFC0);
  EXPECT_EQ(bf16_to_fp32(0x4049), 3.140625f);
  EXPECT_EQ(fp32_to_bf16(3.14159265f), 0x4049);
  EXPECT_EQ(fp32_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(bf16_to_fp32(0x7F7F), bits_to_float(0x7F7F0000u));  // largest finite
  // Ties to even on the 16 dropped bits.
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3F808000u)), 0x3F80);  // 1 + 2^-8: tie, even
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3F818000u)), 0x3F82);  // tie, odd -> up
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3F808001u)), 0x3F81);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3F807FFFu)), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3FFF8000u)), 0x4000);  // carry into exponent
}

TEST(Bf16, SubnormalsInfNaN) {
  // Subnormals are rounded, not flushed.
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x00010000u)), 0x0001);
  EXPECT_EQ(bf16_to_fp32(0x0001), bits_to_float(0x00010000u));
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x00008000u)), 0x0000);  // tie -> even 0
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x00018000u)), 0x0002);  // tie -> even 2
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x80008001u)), 0x8001);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x007FFFFFu)), 0x0080);  // rounds up to smallest normal

  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fp32_to_bf16(inf), 0x7F80);
  EXPECT_EQ(fp32_to_bf16(-inf), 0xFF80);
  EXPECT_EQ(bf16_to_fp32(0xFF80), -inf);
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // overflows on rounding
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x7F7F8000u)), 0x7F80);  // tie, odd -> inf

  for (uint32_t u : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu}) {
    const uint16_t h = fp32_to_bf16(bits_to_float(u));
    EXPECT_TRUE(std::isnan(bf16_to_fp32(h))) << std::hex << u;
    EXPECT_EQ(h >> 15, u >> 31);
  }
  EXPECT_TRUE(std::isnan(bf16_to_fp32(0x7FC0)));
}

TEST(Bf16, ExhaustiveRoundTrip) {
  for (uint32_t u = 0; u < 0x10000; ++u) {
    const auto h = static_cast<uint16_t>(u);
    if ((h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0) continue;  // NaN
    const float f = bf16_to_fp32(h);
    ASSERT_EQ(float_bits(f), u << 16);
    ASSERT_EQ(fp32_to_bf16(f), h) << std::hex << u;
  }
}

// ===========================================================================
// Hand-built blocks: bytes written out, expected values worked out by hand.

TEST(HandBuilt, F32) {
  Bytes b;
  append(b, {0x00, 0x00, 0xC0, 0x3F});  // 1.5
  append(b, {0x00, 0x00, 0x80, 0xBF});  // -1.0
  append(b, {0x00, 0x00, 0x80, 0x7F});  // +inf
  append(b, {0x01, 0x00, 0x00, 0x00});  // smallest subnormal
  const auto y = dequant(GgmlType::F32, b, 4);
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[1], -1.0f);
  EXPECT_EQ(y[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(y[3], std::numeric_limits<float>::denorm_min());
}

TEST(HandBuilt, F16) {
  Bytes b;
  append(b, {0x00, 0x3C, 0x00, 0xC0, 0xFF, 0x7B, 0x01, 0x00, 0x66, 0x2E});
  const auto y = dequant(GgmlType::F16, b, 5);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 65504.0f);
  EXPECT_EQ(y[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(y[4], 0.0999755859375f);
}

TEST(HandBuilt, BF16) {
  Bytes b;
  append(b, {0x80, 0x3F, 0xC0, 0xBF, 0x49, 0x40, 0x01, 0x00});
  const auto y = dequant(GgmlType::BF16, b, 4);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -1.5f);
  EXPECT_EQ(y[2], 3.140625f);
  EXPECT_EQ(y[3], bits_to_float(0x00010000u));
}

TEST(HandBuilt, F64) {
  Bytes b;
  append(b, {0x9A, 0x99, 0x99, 0x99, 0x99, 0x99, 0xB9, 0x3F});  // 0.1
  append(b, {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xC0});  // -2.5
  const auto y = dequant(GgmlType::F64, b, 2);
  EXPECT_EQ(y[0], 0.1f);
  EXPECT_EQ(y[1], -2.5f);
}

// The 4-bit nibble pattern used by the legacy blocks below: byte j holds
// j (low nibble, element j) and 15 - j (high nibble, element 16 + j).
const std::initializer_list<uint8_t> kNibbles = {0xF0, 0xE1, 0xD2, 0xC3, 0xB4, 0xA5, 0x96, 0x87,
                                                 0x78, 0x69, 0x5A, 0x4B, 0x3C, 0x2D, 0x1E, 0x0F};

TEST(HandBuilt, Q4_0) {
  Bytes b;
  append(b, {0x00, 0x38});  // d = 0.5
  append(b, kNibbles);
  const auto y = dequant(GgmlType::Q4_0, b, 32);
  const float want[32] = {-4,  -3.5, -3,   -2.5, -2,   -1.5, -1,   -0.5, 0,    0.5, 1,
                          1.5, 2,    2.5,  3,    3.5,  3.5,  3,    2.5,  2,    1.5, 1,
                          0.5, 0,    -0.5, -1,   -1.5, -2,   -2.5, -3,   -3.5, -4};
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], want[i]) << i;
}

TEST(HandBuilt, Q4_1) {
  Bytes b;
  append(b, {0x00, 0x34, 0x00, 0xBC});  // d = 0.25, m = -1
  append(b, kNibbles);
  const auto y = dequant(GgmlType::Q4_1, b, 32);
  const float want[32] = {-1,   -0.75, -0.5, -0.25, 0,    0.25, 0.5,   0.75, 1,     1.25, 1.5,
                          1.75, 2,     2.25, 2.5,   2.75, 2.75, 2.5,   2.25, 2,     1.75, 1.5,
                          1.25, 1,     0.75, 0.5,   0.25, 0,    -0.25, -0.5, -0.75, -1};
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], want[i]) << i;
}

TEST(HandBuilt, Q5_0) {
  Bytes b;
  append(b, {0x00, 0x38});              // d = 0.5
  append(b, {0x01, 0x00, 0x10, 0x80});  // qh = 0x80100001: 5th bit of elements 0, 20, 31
  append(b, kNibbles);
  const auto y = dequant(GgmlType::Q5_0, b, 32);
  // (q - 16) / 2 with q = 0..15 (elements 0..15) and 15..0 (16..31), +16 where qh says.
  const float want[32] = {0,    -7.5, -7,   -6.5, -6,   -5.5, -5,   -4.5, -4,   -3.5, -3,
                          -2.5, -2,   -1.5, -1,   -0.5, -0.5, -1,   -1.5, -2,   5.5,  -3,
                          -3.5, -4,   -4.5, -5,   -5.5, -6,   -6.5, -7,   -7.5, 0};
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], want[i]) << i;
}

TEST(HandBuilt, Q5_1) {
  Bytes b;
  append(b, {0x00, 0x34, 0x00, 0x38});  // d = 0.25, m = 0.5
  append(b, {0x02, 0x00, 0x01, 0x00});  // qh = 0x00010002: 5th bit of elements 1 and 16
  append(b, kNibbles);
  const auto y = dequant(GgmlType::Q5_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    const int q_lo = j + (j == 1 ? 16 : 0);
    const int q_hi = (15 - j) + (j == 0 ? 16 : 0);
    EXPECT_EQ(y[j], q_lo * 0.25f + 0.5f) << j;
    EXPECT_EQ(y[16 + j], q_hi * 0.25f + 0.5f) << 16 + j;
  }
  EXPECT_EQ(y[1], 4.75f);
  EXPECT_EQ(y[16], 8.25f);
  EXPECT_EQ(y[31], 0.5f);
}

// int8 pattern for the 8-bit blocks: the extremes and a run around zero.
const std::initializer_list<uint8_t> kInt8s = {
    0x80, 0x81, 0xFF, 0x00, 0x01, 0x7F, 0xF0, 0x10, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,
    0xF9, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B};
const int kInt8Values[32] = {-128, -127, -1,  0,  1,  127, -16, 16, -15, -14, -13,
                             -12,  -11,  -10, -9, -8, -7,  -6,  -5, -4,  -3,  -2,
                             2,    3,    4,   5,  6,  7,   8,   9,  10,  11};

TEST(HandBuilt, Q8_0) {
  Bytes b;
  append(b, {0x00, 0x38});  // d = 0.5
  append(b, kInt8s);
  const auto y = dequant(GgmlType::Q8_0, b, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], kInt8Values[i] * 0.5f) << i;
  EXPECT_EQ(y[0], -64.0f);
  EXPECT_EQ(y[5], 63.5f);
}

TEST(HandBuilt, Q8_1) {
  Bytes b;
  append(b, {0x00, 0x34, 0x34, 0x12});  // d = 0.25, s = 0x1234 (ignored by dequant)
  append(b, kInt8s);
  const auto y = dequant(GgmlType::Q8_1, b, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], kInt8Values[i] * 0.25f) << i;
}

TEST(HandBuilt, Q8_K) {
  Bytes b;
  append(b, {0x00, 0x00, 0x00, 0x3E});                                        // d = 0.125 as f32
  for (int j = 0; j < 256; ++j) b.push_back(static_cast<uint8_t>(j ^ 0x80));  // q = j - 128
  for (int j = 0; j < 16; ++j) append_u16(b, 0);                              // bsums, unused
  const auto y = dequant(GgmlType::Q8_K, b, 256);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(y[j], (j - 128) * 0.125f) << j;
}

TEST(HandBuilt, Q2_K) {
  Bytes b;
  // scales: sub-block j has scale j (low nibble) and min 15 - j (high nibble).
  append(b, {0xF0, 0xE1, 0xD2, 0xC3, 0xB4, 0xA5, 0x96, 0x87, 0x78, 0x69, 0x5A, 0x4B, 0x3C, 0x2D,
             0x1E, 0x0F});
  // qs (two halves of 32 bytes): bytes 0..15 are 0xE4 = q 0,1,2,3 at shifts
  // 0,2,4,6; bytes 16..31 are 0x1B = q 3,2,1,0.
  for (int i = 0; i < 64; ++i) b.push_back(i % 32 < 16 ? 0xE4 : 0x1B);
  append(b, {0x00, 0x38, 0x00, 0x34});  // d = 0.5, dmin = 0.25
  ASSERT_EQ(b.size(), 84u);
  const auto y = dequant(GgmlType::Q2_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int sub = e / 16, shift_index = (e % 128) / 32;
    const int q = e % 32 < 16 ? shift_index : 3 - shift_index;
    EXPECT_EQ(y[e], 0.5f * sub * q - 0.25f * (15 - sub)) << e;
  }
  EXPECT_EQ(y[0], -3.75f);    // scale 0, min 15, q 0
  EXPECT_EQ(y[20], -2.0f);    // scale 1, min 14, q 3: 1.5 - 3.5
  EXPECT_EQ(y[100], 6.75f);   // scale 6, min 9, q 3: 9 - 2.25
  EXPECT_EQ(y[130], -1.75f);  // scale 8, min 7, q 0
  EXPECT_EQ(y[255], 0.0f);    // scale 15, min 0, q 0
}

TEST(HandBuilt, Q3_K) {
  // Sub-block scales -32, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 31,
  // stored +32 as 6 bits: low nibbles in bytes 0..7 (j < 8 low, j >= 8 high),
  // top 2 bits in bytes 8..11.
  const int scale[16] = {-32, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 31};
  Bytes b;
  for (int i = 0; i < 16; ++i)
    b.push_back(0xAA);  // hmask[0..15]: high bit set at odd bit positions
  for (int i = 0; i < 16; ++i) b.push_back(0x55);  // hmask[16..31]: at even bit positions
  // qs: low 2 bits; bytes 0..15 of each 32 are 0xE4 (0,1,2,3 at shifts 0,2,4,6), 16..31 0x1B.
  for (int i = 0; i < 64; ++i) b.push_back(i % 32 < 16 ? 0xE4 : 0x1B);
  append(b, {0x60, 0x7F, 0x80, 0x91, 0xA2, 0xF3, 0x04, 0xF5, 0xA8, 0xA9, 0xEA, 0xEA});
  append(b, {0x00, 0x38});  // d = 0.5
  ASSERT_EQ(b.size(), 110u);
  const auto y = dequant(GgmlType::Q3_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int shift_index = (e % 128) / 32;
    const int low2 = e % 32 < 16 ? shift_index : 3 - shift_index;
    const uint8_t hmask = (e % 32) < 16 ? 0xAA : 0x55;
    const bool high = (hmask >> (e / 32)) & 1;
    const int q = low2 - (high ? 0 : 4);
    EXPECT_EQ(y[e], 0.5f * scale[e / 16] * q) << e;
  }
  EXPECT_EQ(y[0], 64.0f);     // scale -32, q = 0 - 4
  EXPECT_EQ(y[50], -1.0f);    // scale 1, q = 2 - 4
  EXPECT_EQ(y[200], -10.0f);  // scale 10, q = 2 - 4
  EXPECT_EQ(y[225], 24.0f);   // scale 16, q = 3 (high bit set)
  EXPECT_EQ(y[255], -62.0f);  // scale 31, q = 0 - 4
}

// Q4_K / Q5_K scale bytes for (scale, min) pairs
// (1,0) (2,1) (3,2) (4,3) (17,52) (33,20) (49,63) (63,36): pairs 4..7 have
// different top bits in scale and min, so mixing up bytes 0..3 and 4..7 shows.
const std::initializer_list<uint8_t> kK4Scales = {0x41, 0x82, 0xC3, 0xC4, 0xC0, 0x41,
                                                  0xC2, 0x83, 0x41, 0x41, 0xF1, 0x4F};
const int kK4Sc[8] = {1, 2, 3, 4, 17, 33, 49, 63};
const int kK4Min[8] = {0, 1, 2, 3, 52, 20, 63, 36};

TEST(HandBuilt, Q4_K) {
  Bytes b;
  append(b, {0x00, 0x3C, 0x00, 0x38});  // d = 1, dmin = 0.5
  append(b, kK4Scales);
  // qs[i]: low nibble i % 16, high nibble 15 - i % 16.
  for (int i = 0; i < 128; ++i)
    b.push_back(static_cast<uint8_t>((i & 15) | ((15 - (i & 15)) << 4)));
  const auto y = dequant(GgmlType::Q4_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int r = e % 64, lane = r % 32;
    const int q = r < 32 ? lane % 16 : 15 - lane % 16;
    const int sub = e / 32;
    EXPECT_EQ(y[e], 1.0f * kK4Sc[sub] * q - 0.5f * kK4Min[sub]) << e;
  }
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[33], 27.5f);    // (2, 1): 2*14 - 0.5
  EXPECT_EQ(y[200], 360.5f);  // (49, 63): 49*8 - 31.5
  EXPECT_EQ(y[224], 927.0f);  // (63, 36): 63*15 - 18
  EXPECT_EQ(y[255], -18.0f);
}

TEST(HandBuilt, Q5_K) {
  Bytes b;
  append(b, {0x00, 0x3C, 0x00, 0x38});  // d = 1, dmin = 0.5
  append(b, kK4Scales);
  // qh: bit 2c is the 5th bit of the low-nibble element of chunk c, bit 2c+1
  // of the high-nibble one. 0x96 = 10010110 for lanes 0..15, 0x69 for 16..31.
  for (int i = 0; i < 16; ++i) b.push_back(0x96);
  for (int i = 0; i < 16; ++i) b.push_back(0x69);
  for (int i = 0; i < 128; ++i)
    b.push_back(static_cast<uint8_t>((i & 15) | ((15 - (i & 15)) << 4)));
  ASSERT_EQ(b.size(), 176u);
  const auto y = dequant(GgmlType::Q5_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int chunk = e / 64, r = e % 64, lane = r % 32;
    const bool upper = r >= 32;
    const uint8_t qh = lane < 16 ? 0x96 : 0x69;
    const int high = (qh >> (2 * chunk + (upper ? 1 : 0))) & 1;
    const int q = (upper ? 15 - lane % 16 : lane % 16) + 16 * high;
    const int sub = e / 32;
    EXPECT_EQ(y[e], 1.0f * kK4Sc[sub] * q - 0.5f * kK4Min[sub]) << e;
  }
  EXPECT_EQ(y[0], 0.0f);      // (1, 0), q = 0
  EXPECT_EQ(y[20], 20.0f);    // (1, 0), q = 4 + 16
  EXPECT_EQ(y[40], 45.5f);    // (2, 1), q = 7 + 16
  EXPECT_EQ(y[128], 246.0f);  // (17, 52), q = 0 + 16: 272 - 26
  EXPECT_EQ(y[255], -18.0f);  // (63, 36), q = 0
}

TEST(HandBuilt, Q6_K) {
  const int scale[16] = {-128, -1, 0, 1, 2, 3, 4, 5, 10, 20, 30, 40, 50, 60, 100, 127};
  Bytes b;
  // ql[i]: low nibble i % 16, high nibble 15 - i % 16.
  for (int i = 0; i < 128; ++i)
    b.push_back(static_cast<uint8_t>((i & 15) | ((15 - (i & 15)) << 4)));
  // qh: first half 0xE4 (top bits 0,1,2,3 for the four quarters), second half 0x1B (3,2,1,0).
  for (int i = 0; i < 32; ++i) b.push_back(0xE4);
  for (int i = 0; i < 32; ++i) b.push_back(0x1B);
  append(b, {0x80, 0xFF, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x0A, 0x14, 0x1E, 0x28, 0x32, 0x3C,
             0x64, 0x7F});
  append(b, {0x00, 0x34});  // d = 0.25
  ASSERT_EQ(b.size(), 210u);
  const auto y = dequant(GgmlType::Q6_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128, quarter = (e % 128) / 32, lane = e % 32;
    const int ql_index = 64 * half + lane + (quarter % 2) * 32;
    const int nibble_src = ql_index % 16;
    const int nibble = quarter < 2 ? nibble_src : 15 - nibble_src;
    const int top = half == 0 ? quarter : 3 - quarter;
    const int q = (nibble | (top << 4)) - 32;
    EXPECT_EQ(y[e], 0.25f * scale[e / 16] * q) << e;
  }
  EXPECT_EQ(y[0], 1024.0f);     // scale -128, q = -32
  EXPECT_EQ(y[20], 7.0f);       // scale -1, q = 4 - 32
  EXPECT_EQ(y[100], 27.0f);     // scale 4, q = 11 + 48 - 32
  EXPECT_EQ(y[130], 45.0f);     // scale 10, q = 2 + 48 - 32
  EXPECT_EQ(y[255], -1016.0f);  // scale 127, q = -32
}

// ===========================================================================
// Quantizer rounding as in ggml's reference quantizers.

TEST(QuantRounding, Q4_0RoundsHalfUp) {
  std::vector<float> x(32, 0.0f);
  x[0] = -8.0f;  // largest magnitude: d = -8 / -8 = 1
  x[1] = 0.5f;   // 8.5 + 0.5 -> q 9 -> +1
  x[2] = -0.5f;  // q 8 -> 0
  x[3] = 2.5f;   // q 11 -> 3
  x[4] = -2.5f;  // q 6 -> -2
  x[5] = 8.0f;   // q 16 clipped to 15 -> 7
  const Bytes b = quant(GgmlType::Q4_0, x);
  EXPECT_EQ(b[0], 0x00);
  EXPECT_EQ(b[1], 0x3C);  // d = 1.0
  const auto y = dequant(GgmlType::Q4_0, b, 32);
  EXPECT_EQ(y[0], -8.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 3.0f);
  EXPECT_EQ(y[4], -2.0f);
  EXPECT_EQ(y[5], 7.0f);
}

TEST(QuantRounding, Q8_0RoundsHalfAwayFromZero) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.5f;
  x[4] = -0.5f;
  const auto y = dequant(GgmlType::Q8_0, quant(GgmlType::Q8_0, x), 32);
  EXPECT_EQ(y[0], 127.0f);
  EXPECT_EQ(y[1], 3.0f);
  EXPECT_EQ(y[2], -3.0f);
  EXPECT_EQ(y[3], 1.0f);
  EXPECT_EQ(y[4], -1.0f);
}

TEST(QuantRounding, Q8_KRoundsHalfToEvenAndFillsBsums) {
  std::vector<float> x(256, 0.0f);
  x[0] = -127.0f;  // the signed max maps to -127: iscale = 1, d = 1
  x[1] = 2.5f;
  x[2] = 3.5f;
  x[3] = -0.5f;
  x[17] = 100.0f;
  const Bytes b = quant(GgmlType::Q8_K, x);
  EXPECT_EQ(b[4 + 0], 0x81);  // -127
  EXPECT_EQ(b[4 + 1], 2);
  EXPECT_EQ(b[4 + 2], 4);
  EXPECT_EQ(b[4 + 3], 0);
  const auto bsum = [&](int j) {
    return static_cast<int16_t>(b[260 + 2 * j] | (b[261 + 2 * j] << 8));
  };
  EXPECT_EQ(bsum(0), -127 + 2 + 4);
  EXPECT_EQ(bsum(1), 100);
  EXPECT_EQ(bsum(2), 0);
  const auto y = dequant(GgmlType::Q8_K, b, 256);
  EXPECT_EQ(y[0], -127.0f);
  EXPECT_EQ(y[1], 2.0f);
  EXPECT_EQ(y[2], 4.0f);
}

TEST(QuantRounding, Q8_1StoresDTimesSum) {
  std::vector<float> x(32, 0.0f);
  x[0] = 63.5f;  // d = 0.5
  x[1] = 1.0f;   // q 2
  x[2] = -3.0f;  // q -6
  const Bytes b = quant(GgmlType::Q8_1, x);
  EXPECT_EQ(b[0] | (b[1] << 8), 0x3800);  // d = 0.5
  EXPECT_EQ(fp16_to_fp32(static_cast<uint16_t>(b[2] | (b[3] << 8))), 0.5f * (127 + 2 - 6));
}

// ===========================================================================
// Round trips: random data -> quantize -> dequantize, within the analytic
// per-element bound of each format.

// Blocks of `block` elements with varied shapes and magnitudes.
std::vector<float> test_data(int64_t block, int blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  std::vector<float> x;
  for (int b = 0; b < blocks; ++b) {
    const float scale = std::pow(10.0f, -3.0f + 5.0f * uni(rng));  // 1e-3 .. 1e2
    const int kind = b % 8;
    for (int64_t i = 0; i < block; ++i) {
      float v = normal(rng) * scale;
      switch (kind) {
        case 1:
          v = std::fabs(v) + scale;
          break;  // all positive, offset
        case 2:
          v = -std::fabs(v) - scale;
          break;  // all negative
        case 3:
          v = 0.0f;
          break;  // all zero
        case 4:
          v = 0.75f * scale;
          break;  // constant
        case 5:
          if (i == block / 3) v = 40 * scale;
          break;  // one outlier
        case 6:
          v = (uni(rng) - 0.5f) * 1e-5f;
          break;  // tiny: subnormal f16 scales
        default:
          break;
      }
      x.push_back(v);
    }
  }
  return x;
}

// Bound on fp16 rounding up of v >= 0: one f16 ulp.
float f16_up_bound(float v) { return v * (1.0f + 1.0f / 1024) + std::ldexp(1.0f, -24); }
float f16r(float v) { return fp16_to_fp32(fp32_to_fp16(v)); }

// Allowed |error| for every element of one block of `x`.
std::vector<float> error_bounds(GgmlType type, const float* x) {
  const int64_t n = traits(type).block_size;
  std::vector<float> bound(static_cast<size_t>(n));
  float amax = 0.0f, smax = 0.0f, mn = x[0], mx = x[0];
  for (int64_t i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      smax = x[i];
    }
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  const float eps = 1e-6f * amax;              // float rounding in (de)quantization
  auto symmetric_legacy = [&](float levels) {  // Q4_0 (8) / Q5_0 (16)
    const float d = smax / -levels;
    for (int64_t i = 0; i < n; ++i) {
      const float t = d != 0.0f ? x[i] / d : 0.0f;
      // Rounding error d/2, except the top level (levels - 1) clips values
      // between levels - 0.5 and levels: error up to d.
      const float base = t > levels - 0.5f ? std::fabs(d) : std::fabs(d) / 2;
      bound[i] = base + levels * std::fabs(f16r(d) - d) + eps;
    }
  };
  auto affine_legacy = [&](float nmax) {  // Q4_1 (15) / Q5_1 (31)
    const float d = (mx - mn) / nmax;
    for (auto& b : bound)
      b = d / 2 + nmax * std::fabs(f16r(d) - d) + std::fabs(f16r(mn) - mn) + eps;
  };
  auto k_affine = [&](int n_sub, float nmax, float smax_field) {
    const int len = 256 / n_sub;
    std::vector<float> lo(n_sub), hi(n_sub);
    float max_m = 0;
    for (int j = 0; j < n_sub; ++j) {
      lo[j] = std::min(0.0f, *std::min_element(x + j * len, x + (j + 1) * len));
      hi[j] = *std::max_element(x + j * len, x + (j + 1) * len);
      max_m = std::max(max_m, -lo[j]);
    }
    const float dmin = f16_up_bound(max_m / smax_field);
    float max_s = 0;
    for (int j = 0; j < n_sub; ++j) max_s = std::max(max_s, (hi[j] - lo[j] + dmin) / nmax);
    const float d = f16_up_bound(max_s / smax_field);
    for (int j = 0; j < n_sub; ++j) {
      for (int i = 0; i < len; ++i)
        bound[j * len + i] = 0.5f * ((hi[j] - lo[j] + dmin) / nmax + d) + eps;
    }
  };
  auto k_symmetric = [&](float qneg, float qpos, float smax_field) {
    std::vector<float> need(16);
    float max_need = 0;
    for (int j = 0; j < 16; ++j) {
      float p = 0, m = 0;
      for (int i = 0; i < 16; ++i) {
        p = std::max(p, x[16 * j + i]);
        m = std::max(m, -x[16 * j + i]);
      }
      need[j] = std::min(std::max(m / qneg, p / qpos), std::max(p / qneg, m / qpos));
      max_need = std::max(max_need, need[j]);
    }
    const float d = f16_up_bound(max_need / smax_field);
    for (int j = 0; j < 16; ++j) {
      for (int i = 0; i < 16; ++i) bound[16 * j + i] = 0.5f * (need[j] + d) + eps;
    }
  };
  switch (type) {
    case GgmlType::Q4_0:
      symmetric_legacy(8);
      break;
    case GgmlType::Q5_0:
      symmetric_legacy(16);
      break;
    case GgmlType::Q4_1:
      affine_legacy(15);
      break;
    case GgmlType::Q5_1:
      affine_legacy(31);
      break;
    case GgmlType::Q8_0:
    case GgmlType::Q8_1: {
      const float d = amax / 127;
      for (auto& b : bound) b = d / 2 + 127 * std::fabs(f16r(d) - d) + eps;
      break;
    }
    case GgmlType::Q8_K: {  // d stays f32
      for (auto& b : bound) b = amax / 127 / 2 + eps;
      break;
    }
    case GgmlType::Q2_K:
      k_affine(16, 3, 15);
      break;
    case GgmlType::Q4_K:
      k_affine(8, 15, 63);
      break;
    case GgmlType::Q5_K:
      k_affine(8, 31, 63);
      break;
    case GgmlType::Q3_K:
      k_symmetric(4, 3, 31);
      break;
    case GgmlType::Q6_K:
      k_symmetric(32, 31, 127);
      break;
    default:
      ADD_FAILURE() << "no bound for " << type_name(type);
  }
  return bound;
}

class RoundTrip : public ::testing::TestWithParam<GgmlType> {};

TEST_P(RoundTrip, ErrorWithinAnalyticBound) {
  const GgmlType type = GetParam();
  const int64_t block = traits(type).block_size;
  const int blocks = block == 32 ? 256 : 48;
  const std::vector<float> x = test_data(block, blocks, 20240601u + static_cast<uint32_t>(type));
  const Bytes q = quant(type, x);
  const auto y = dequant(type, q, static_cast<int64_t>(x.size()));
  double worst_ratio = 0;  // largest error / bound seen, for the log
  for (int b = 0; b < blocks; ++b) {
    const float* xb = x.data() + b * block;
    const std::vector<float> bound = error_bounds(type, xb);
    for (int64_t i = 0; i < block; ++i) {
      const float err = std::fabs(y[b * block + i] - xb[i]);
      ASSERT_LE(err, bound[i]) << type_name(type) << " block " << b << " element " << i
                               << " x=" << xb[i] << " y=" << y[b * block + i];
      if (bound[i] > 0) worst_ratio = std::max(worst_ratio, static_cast<double>(err / bound[i]));
    }
  }
  // The bound is not vacuous: some element comes close to it.
  EXPECT_GT(worst_ratio, 0.3) << type_name(type);
}

TEST_P(RoundTrip, ZeroRowIsExactAndDeterministic) {
  const GgmlType type = GetParam();
  const std::vector<float> zeros(static_cast<size_t>(2 * traits(type).block_size), 0.0f);
  const Bytes q = quant(type, zeros);
  for (float v : dequant(type, q, static_cast<int64_t>(zeros.size()))) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(quant(type, zeros), q);
}

// NaN / inf / huge input must not be UB (float -> int casts are clamped; the
// sanitizer build checks) and must not leak into the neighbouring block.
TEST_P(RoundTrip, NonFiniteInputStaysInItsBlock) {
  const GgmlType type = GetParam();
  const int64_t block = traits(type).block_size;
  std::vector<float> x = test_data(block, 2, 5);
  x[1] = std::numeric_limits<float>::quiet_NaN();
  x[2] = std::numeric_limits<float>::infinity();
  x[3] = -std::numeric_limits<float>::infinity();
  x[4] = 1e30f;
  const Bytes q = quant(type, x);
  const std::vector<float> second(x.begin() + block, x.end());
  const Bytes q_second = quant(type, second);
  const auto offset = static_cast<std::ptrdiff_t>(traits(type).block_bytes);
  EXPECT_TRUE(std::equal(q_second.begin(), q_second.end(), q.begin() + offset));
  const auto y = dequant(type, q, 2 * block);  // must not trap either
  EXPECT_EQ(y.size(), static_cast<size_t>(2 * block));
}

INSTANTIATE_TEST_SUITE_P(GgmlTypes, RoundTrip,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                                           GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q8_1,
                                           GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
                                           GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_K),
                         [](const auto& info) { return std::string(type_name(info.param)); });

TEST(RoundTripPlain, FloatTypes) {
  const std::vector<float> x = test_data(64, 16, 7);
  EXPECT_EQ(dequant(GgmlType::F32, quant(GgmlType::F32, x), 1024), x);
  EXPECT_EQ(dequant(GgmlType::F64, quant(GgmlType::F64, x), 1024), x);
  const auto h = dequant(GgmlType::F16, quant(GgmlType::F16, x), 1024);
  const auto bf = dequant(GgmlType::BF16, quant(GgmlType::BF16, x), 1024);
  for (size_t i = 0; i < x.size(); ++i) {
    // Half an ulp: 2^-11 relative for normal halves, 2^-25 absolute below.
    EXPECT_LE(std::fabs(h[i] - x[i]),
              std::max(std::fabs(x[i]) * std::ldexp(1.0f, -11), std::ldexp(1.0f, -25)));
    EXPECT_LE(std::fabs(bf[i] - x[i]), std::fabs(x[i]) * std::ldexp(1.0f, -8));
    EXPECT_EQ(fp32_to_fp16(h[i]), fp32_to_fp16(x[i]));
    EXPECT_EQ(fp32_to_bf16(bf[i]), fp32_to_bf16(x[i]));
  }
}

// ===========================================================================
// Exactly representable input comes back exactly (values and bytes).

struct Exact {
  GgmlType type;
  std::vector<float> x;
};

// Legacy blocks: values q*d (+ m) on the grid, with the extremes present so
// that the quantizer's own choice of d (and m) is the one used to build them.
std::vector<float> legacy_grid(std::mt19937& rng, int q_lo, int q_hi, float d, float m,
                               int force_lo_at, int force_hi_at) {
  std::uniform_int_distribution<int> pick(q_lo, q_hi);
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) {
    int q = pick(rng);
    if (i == force_lo_at) q = q_lo;
    if (i == force_hi_at) q = q_hi;
    x[i] = static_cast<float>(q) * d + m;
  }
  return x;
}

void expect_exact(GgmlType type, const std::vector<float>& x) {
  SCOPED_TRACE(std::string(type_name(type)));
  const Bytes q = quant(type, x);
  const auto y = dequant(type, q, static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i]) << i;
  EXPECT_EQ(quant(type, y), q);  // and quantizing the result again changes nothing
}

TEST(ExactValues, LegacyTypes) {
  std::mt19937 rng(99);
  for (int rep = 0; rep < 20; ++rep) {
    // Q4_0: the value of largest magnitude must be -8d (q = 0), d = 0.5.
    std::vector<float> q40 = legacy_grid(rng, -7, 7, 0.5f, 0.0f, -1, -1);
    q40[static_cast<size_t>(rep) % 32] = -4.0f;
    expect_exact(GgmlType::Q4_0, q40);
    // Q5_0: d = 0.25, extreme -16d.
    std::vector<float> q50 = legacy_grid(rng, -15, 15, 0.25f, 0.0f, -1, -1);
    q50[static_cast<size_t>(rep + 5) % 32] = -4.0f;
    expect_exact(GgmlType::Q5_0, q50);
    // Q4_1: min -1, d = 0.25, both extremes present.
    expect_exact(GgmlType::Q4_1, legacy_grid(rng, 0, 15, 0.25f, -1.0f, rep % 32, (rep + 7) % 32));
    // Q5_1: min -2, d = 0.125.
    expect_exact(GgmlType::Q5_1, legacy_grid(rng, 0, 31, 0.125f, -2.0f, rep % 32, (rep + 9) % 32));
    // Q8_0 / Q8_1: d = 0.5, amax = 127d present.
    expect_exact(GgmlType::Q8_0, legacy_grid(rng, -127, 127, 0.5f, 0.0f, rep % 32, -1));
    expect_exact(GgmlType::Q8_1, legacy_grid(rng, -127, 127, 0.5f, 0.0f, -1, rep % 32));
  }
}

// K-quant blocks built from "canonical" fields: the super-block scale(s)
// reached by the largest sub-block field (15 / 63 / 31 / 127), and every
// sub-block using both its lowest and highest level. Power-of-two super
// scales keep every product exact.
std::vector<float> k_affine_block(std::mt19937& rng, int n_sub, int nmax, int smax_field, float d,
                                  float dmin) {
  const int len = 256 / n_sub;
  std::uniform_int_distribution<int> field(0, smax_field), level(0, nmax);
  std::vector<float> x(256);
  for (int j = 0; j < n_sub; ++j) {
    int sc = std::max(1, field(rng)), m = field(rng);
    if (j == 1) sc = smax_field;
    if (j == 2) m = smax_field;
    for (int i = 0; i < len; ++i) {
      int q = level(rng);
      if (i == 0) q = 0;
      if (i == len - 1) q = nmax;
      x[j * len + i] =
          d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(m);
    }
  }
  return x;
}

std::vector<float> k_symmetric_block(std::mt19937& rng, int qneg, int qpos, int smax_field,
                                     float d) {
  std::uniform_int_distribution<int> field(-smax_field, smax_field), level(-qneg, qpos);
  std::vector<float> x(256);
  for (int j = 0; j < 16; ++j) {
    int sc = field(rng);
    if (sc == 0) sc = 1;
    if (j == 3) sc = -smax_field;
    if (j == 4) sc = smax_field;
    for (int i = 0; i < 16; ++i) {
      int q = level(rng);
      if (i == 2) q = -qneg;
      if (i == 9) q = qpos;
      x[16 * j + i] = d * static_cast<float>(sc) * static_cast<float>(q);
    }
  }
  return x;
}

TEST(ExactValues, KQuants) {
  std::mt19937 rng(1234);
  for (int rep = 0; rep < 20; ++rep) {
    expect_exact(GgmlType::Q2_K, k_affine_block(rng, 16, 3, 15, 0.0625f, 0.03125f));
    expect_exact(GgmlType::Q4_K, k_affine_block(rng, 8, 15, 63, 0.015625f, 0.0078125f));
    expect_exact(GgmlType::Q5_K, k_affine_block(rng, 8, 31, 63, 0.0078125f, 0.015625f));
    expect_exact(GgmlType::Q3_K, k_symmetric_block(rng, 4, 3, 31, 0.125f));
    expect_exact(GgmlType::Q6_K, k_symmetric_block(rng, 32, 31, 127, 0.0078125f));
  }
  // Q8_K: the signed value of largest magnitude is -127 d.
  std::uniform_int_distribution<int> level(-126, 126);
  std::vector<float> x(256);
  for (auto& v : x) v = 0.125f * static_cast<float>(level(rng));
  x[77] = -127 * 0.125f;
  expect_exact(GgmlType::Q8_K, x);
}

TEST(ExactValues, HandBuiltQ4_KBlockSurvivesRequantization) {
  // The hand-built Q4_K block above has scale 63 and min 63 in use and levels
  // 0 and 15 in every sub-block, so our quantizer recovers it byte for byte.
  Bytes b;
  append(b, {0x00, 0x3C, 0x00, 0x38});
  append(b, kK4Scales);
  for (int i = 0; i < 128; ++i)
    b.push_back(static_cast<uint8_t>((i & 15) | ((15 - (i & 15)) << 4)));
  const auto y = dequant(GgmlType::Q4_K, b, 256);
  EXPECT_EQ(quant(GgmlType::Q4_K, y), b);
}

}  // namespace
}  // namespace kvbench
