// AVX2 + FMA + F16C kernels (no global -march: the functions carry the target
// attribute and run only after the run-time CPU check in quant_dot.cpp).
// Float operations follow the order defined in quant_dot_scalar.cpp exactly.
// The legacy types (Q4_0 .. Q8_0) are in quant_dot_interleaved_avx2.cpp.
// a * b + c must not be fused behind our back: the order of float operations
// is the contract between the paths. (GCC in ISO mode does not fuse.)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "model/ops/quant_dot_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "model/ops/bytes.h"
#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx2,fma,f16c")

#include "model/ops/quant_dot_rows.h"
#include "model/ops/simd_avx2.h"

namespace kvbench::qdot {
namespace {

// hsum16 of quant_dot_scalar.cpp over lanes 0-7 (lo) and 8-15 (hi).
float hsum16(__m256 lo, __m256 hi) {
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}
int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// ---------------------------------------------------------------------------
// K-quants: per super-block, an exact integer sum over 32-element groups
// (codes u8 times activations s8 through pmaddubsw, minus the offset times the
// activations, times the 16-element sub-block scales through pmaddwd).

// Scales of the two 16-element halves of a 32-element group, as int16 lanes
// matching pmaddubsw's output (lanes 0-7: elements 0-15).
__m256i half_scales(int s0, int s1) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(s1)),
                          _mm_set1_epi16(static_cast<int16_t>(s0)));
}

// Sum over a 32-element group: (codes - offset) * a, scaled per half.
template <int kOffset>
__m256i group_dot(__m256i codes, __m256i a, __m256i scales) {
  __m256i p16 = _mm256_maddubs_epi16(codes, a);
  if constexpr (kOffset > 0)
    p16 = _mm256_sub_epi16(p16, _mm256_maddubs_epi16(_mm256_set1_epi8(kOffset), a));
  return _mm256_madd_epi16(p16, scales);
}

int32_t min_sum(const int* mins16, const uint8_t* a) {
  int32_t s = 0;
  for (int j = 0; j < 16; ++j) s += mins16[j] * static_cast<int16_t>(load_u16(a + 260 + 2 * j));
  return s;
}

void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

struct SuperSums {
  int32_t isum;
  int32_t msum;
};

SuperSums q2_k_sums(const uint8_t* b, const uint8_t* a) {
  const uint8_t* aq = a + 4;
  __m256i acc = _mm256_setzero_si256();
  int mins[16];
  for (int s = 0; s < 16; ++s) mins[s] = b[s] >> 4;
  for (int g = 0; g < 8; ++g) {
    const __m256i q = load256(b + 16 + 32 * (g / 4));
    const __m256i codes = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (g % 4)), _mm256_set1_epi8(3));
    acc = _mm256_add_epi32(acc, group_dot<0>(codes, load256(aq + 32 * g),
                                             half_scales(b[2 * g] & 15, b[2 * g + 1] & 15)));
  }
  return {hsum_i32(acc), min_sum(mins, a)};
}

SuperSums q3_k_sums(const uint8_t* b, const uint8_t* a) {
  const uint8_t* aq = a + 4;
  const uint8_t* s = b + 96;
  int sc[16];
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (s[j] & 0x0F) : (s[j - 8] >> 4);
    const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    sc[j] = (low | (high << 4)) - 32;
  }
  const __m256i hm = load256(b);
  __m256i acc = _mm256_setzero_si256();
  for (int g = 0; g < 8; ++g) {
    const __m256i q = load256(b + 32 + 32 * (g / 4));
    const __m256i low2 = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (g % 4)), _mm256_set1_epi8(3));
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hm, g), _mm256_set1_epi8(1));
    const __m256i codes = _mm256_or_si256(low2, _mm256_slli_epi16(high, 2));
    acc = _mm256_add_epi32(
        acc, group_dot<4>(codes, load256(aq + 32 * g), half_scales(sc[2 * g], sc[2 * g + 1])));
  }
  return {hsum_i32(acc), 0};
}

template <bool kFive>
SuperSums q45_k_sums(const uint8_t* b, const uint8_t* a) {
  const uint8_t* aq = a + 4;
  int sc[8], mn[8], mins16[16];
  for (int j = 0; j < 8; ++j) {
    scale_min_k4(j, b + 4, &sc[j], &mn[j]);
    mins16[2 * j] = mins16[2 * j + 1] = mn[j];
  }
  const uint8_t* ql = kFive ? b + 48 : b + 16;
  const __m256i qh = kFive ? load256(b + 16) : _mm256_setzero_si256();
  __m256i acc = _mm256_setzero_si256();
  for (int c = 0; c < 4; ++c) {
    const __m256i q = load256(ql + 32 * c);
    __m256i lo = _mm256_and_si256(q, _mm256_set1_epi8(0x0F));
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(0x0F));
    if constexpr (kFive) {
      const __m256i one = _mm256_set1_epi8(1);
      lo = _mm256_or_si256(
          lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one), 4));
      hi = _mm256_or_si256(
          hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one), 4));
    }
    acc = _mm256_add_epi32(
        acc, group_dot<0>(lo, load256(aq + 64 * c), half_scales(sc[2 * c], sc[2 * c])));
    acc = _mm256_add_epi32(acc, group_dot<0>(hi, load256(aq + 64 * c + 32),
                                             half_scales(sc[2 * c + 1], sc[2 * c + 1])));
  }
  return {hsum_i32(acc), min_sum(mins16, a)};
}

SuperSums q6_k_sums(const uint8_t* b, const uint8_t* a) {
  const uint8_t* aq = a + 4;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  __m256i acc = _mm256_setzero_si256();
  for (int h = 0; h < 2; ++h) {
    const __m256i qh = load256(b + 128 + 32 * h);
    for (int i = 0; i < 4; ++i) {
      const __m256i lq = load256(b + 64 * h + 32 * (i % 2));
      const __m256i low =
          _mm256_and_si256(i / 2 ? _mm256_srli_epi16(lq, 4) : lq, _mm256_set1_epi8(0x0F));
      const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * i), _mm256_set1_epi8(3));
      const __m256i codes = _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
      const int g = 4 * h + i;
      acc = _mm256_add_epi32(
          acc, group_dot<32>(codes, load256(aq + 32 * g), half_scales(sc[2 * g], sc[2 * g + 1])));
    }
  }
  return {hsum_i32(acc), 0};
}

float f16_at(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }

// Per-format constants: bytes, and where d / dmin sit.
template <SuperSums (*Sums)(const uint8_t*, const uint8_t*), size_t kBytes, size_t kD, size_t kDmin,
          bool kMin>
float kquant_dot(const uint8_t* w, const uint8_t* a, int64_t n) {
  float acc = 0.0f, macc = 0.0f;
  const int64_t nb = n / kQKK;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* wb = w + b * kBytes;
    const uint8_t* ab = a + b * kQ8_KBytes;
    const float da = std::bit_cast<float>(load_u32(ab));
    const SuperSums s = Sums(wb, ab);
    acc = std::fma(f16_at(wb + kD) * da, static_cast<float>(s.isum), acc);
    if constexpr (kMin) macc = std::fma(f16_at(wb + kDmin) * da, static_cast<float>(s.msum), macc);
  }
  if constexpr (kMin) return acc - macc;
  return acc;
}

// ---------------------------------------------------------------------------
// F32 / F16 / BF16 weights, f32 activations: 16 lanes in two registers.

__m256 load8_f32(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
__m256 load8_f16(const uint8_t* p) { return _mm256_cvtph_ps(load128(p)); }
__m256 load8_bf16(const uint8_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(p)), 16));
}
float load1_f32(const uint8_t* p) { return std::bit_cast<float>(load_u32(p)); }
float load1_f16(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }
float load1_bf16(const uint8_t* p) { return std::bit_cast<float>(uint32_t{load_u16(p)} << 16); }

template <__m256 (*Load8)(const uint8_t*), float (*Load1)(const uint8_t*), size_t kSize>
float plain_dot(const uint8_t* w, const uint8_t* a, int64_t n) {
  const auto* x = reinterpret_cast<const float*>(a);
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    lo = _mm256_fmadd_ps(Load8(w + k * kSize), _mm256_loadu_ps(x + k), lo);
    hi = _mm256_fmadd_ps(Load8(w + (k + 8) * kSize), _mm256_loadu_ps(x + k + 8), hi);
  }
  if (k == n) return hsum16(lo, hi);
  alignas(32) float acc[16];
  _mm256_store_ps(acc, lo);
  _mm256_store_ps(acc + 8, hi);
  for (int j = 0; k < n; ++k, ++j) acc[j] = std::fma(Load1(w + k * kSize), x[k], acc[j]);
  return hsum16(_mm256_load_ps(acc), _mm256_load_ps(acc + 8));
}

// ---------------------------------------------------------------------------
// Activation quantizers, bit-identical to ggml_types.cpp's reference.

// roundf(v): half away from zero. Adding the largest float below 0.5 with v's
// sign and truncating is exact for every float (checked exhaustively).
__m256 round_away(__m256 v) {
  const __m256 half =
      _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(0.49999997f));
  return _mm256_round_ps(_mm256_add_ps(v, half), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
}
// clamp_int(v, lo, hi) for integral v: NaN -> lo (max_ps returns its second
// operand when the first is NaN).
__m256i clamp_to_int(__m256 v, float lo, float hi) {
  return _mm256_cvttps_epi32(
      _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(lo)), _mm256_set1_ps(hi)));
}
// 32 int32 in four registers -> 32 int8 in element order.
__m256i pack_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);  // lanes: a0-3 b0-3 | a4-7 b4-7
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i all = _mm256_packs_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
  return _mm256_permutevar8x32_epi32(all, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}
// max |x| over 32 floats; NaNs are ignored as std::max(amax, |x|) does.
float amax32(const float* x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i)
    m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i)), m);
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// One Q8_0/Q8_1 block: d = amax / 127, q = roundf(x / d) clamped to +-127.
// Returns sum(q); d through *d_out.
int quant_q8_block(const float* x, uint8_t* qs, float* d_out) {
  const float amax = amax32(x);
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const __m256 vid = _mm256_set1_ps(id);
  __m256i q[4];
  for (int i = 0; i < 4; ++i)
    q[i] =
        clamp_to_int(round_away(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), vid)), -127.0f, 127.0f);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), pack_i8(q[0], q[1], q[2], q[3]));
  *d_out = d;
  return hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
}

// F16C's round-to-nearest-even conversion: the bits of fp32_to_fp16 for every
// input (non-NaN: AttentionF16.F16cConversionMatchesScalarReferenceBitForBit;
// NaN: both keep the sign and the top payload bits, quiet), at a fraction of
// the scalar function's cost (0.9% of pp2048, two calls per 32 activations).
void store_f16(uint8_t* p, float v) {
  const auto h = static_cast<uint16_t>(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT));
  std::memcpy(p, &h, 2);
}

void quantize_q8_0(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    float d;
    quant_q8_block(x + b * kQK, dst + b * kQ8_0Bytes + 2, &d);
    store_f16(dst + b * kQ8_0Bytes, d);
  }
}

void quantize_q8_1(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    float d;
    const int sum = quant_q8_block(x + b * kQK, dst + b * kQ8_1Bytes + 4, &d);
    store_f16(dst + b * kQ8_1Bytes, d);
    store_f16(dst + b * kQ8_1Bytes + 2, static_cast<float>(sum) * d);
  }
}

// Q8_K: the signed value of largest magnitude (first occurrence) maps to
// -127, q = nearest-even(x * iscale) clamped to [-128, 127], d = 1 / iscale.
void quantize_q8_k(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK, dst += kQ8_KBytes) {
    float amax = 0.0f;
    for (int i = 0; i < kQKK; i += 32) amax = std::max(amax, amax32(x + i));
    std::memset(dst, 0, kQ8_KBytes);
    if (amax == 0.0f) continue;
    float max = 0.0f;
    for (int j = 0; j < kQKK; ++j) {
      if (std::fabs(x[j]) == amax) {
        max = x[j];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const float d = 1.0f / iscale;
    std::memcpy(dst, &d, 4);
    const __m256 vs = _mm256_set1_ps(iscale);
    for (int i = 0; i < kQKK; i += 32) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        const __m256 v = _mm256_mul_ps(vs, _mm256_loadu_ps(x + i + 8 * k));
        q[k] = clamp_to_int(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                            -128.0f, 127.0f);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 4 + i), pack_i8(q[0], q[1], q[2], q[3]));
      for (int h = 0; h < 2; ++h) {
        const int16_t s = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[2 * h], q[2 * h + 1])));
        std::memcpy(dst + 260 + 2 * ((i / 16) + h), &s, 2);
      }
    }
  }
}

}  // namespace
}  // namespace kvbench::qdot

KVBENCH_TARGET_END()

namespace kvbench::qdot {

// The table is built from function addresses only (no AVX2 code runs here).
const Kernels* avx2_kernels() {
  static const Kernels k = [] {
    Kernels t;
    t.quantize_q8_0 = quantize_q8_0;
    t.quantize_q8_1 = quantize_q8_1;
    t.quantize_q8_k = quantize_q8_k;
    il::interleaved_avx2_kernels(t);  // the legacy kinds
    t.tile[kQ2_K] = row_tile<kquant_dot<q2_k_sums, 84, 80, 82, true>>;
    t.tile[kQ3_K] = row_tile<kquant_dot<q3_k_sums, 110, 108, 0, false>>;
    t.tile[kQ4_K] = row_tile<kquant_dot<q45_k_sums<false>, 144, 0, 2, true>>;
    t.tile[kQ5_K] = row_tile<kquant_dot<q45_k_sums<true>, 176, 0, 2, true>>;
    t.tile[kQ6_K] = row_tile<kquant_dot<q6_k_sums, 210, 208, 0, false>>;
    t.tile[kF32] = row_tile<plain_dot<load8_f32, load1_f32, 4>>;
    t.tile[kF16] = row_tile<plain_dot<load8_f16, load1_f16, 2>>;
    t.tile[kBF16] = row_tile<plain_dot<load8_bf16, load1_bf16, 2>>;
    return t;
  }();
  return &k;
}

}  // namespace kvbench::qdot

#endif  // x86-64
