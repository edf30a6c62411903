// Internal to attention_avx512.cpp and attention_avx512_bf16.cpp: the
// AVX-512 vector interface of the shared attention algorithm
// (attention_impl.h). Included inside each file's target region, with
// internal linkage, so each file compiles its own copy.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "model/ops/attention_kernels.h"
#include "model/ops/attention_x86.h"
#include "model/ops/simd_avx512.h"

namespace kvbench::attn {
namespace {

struct Avx512 : simd::F32x16 {
  static constexpr int kRegs = 32;
  static constexpr int kGemmCols = 4;
  static V load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static V load_bf16(const uint16_t* p) {
    const __m512i w =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static V load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  // 8 bytes: low nibbles are the even elements, high nibbles the odd ones;
  // interleaving the two puts the 16 codes in element order.
  static V load_u4(const uint8_t* codes, int d) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + d / 2));
    const __m128i m = _mm_set1_epi8(15);
    const __m128i c =
        _mm_unpacklo_epi8(_mm_and_si128(b, m), _mm_and_si128(_mm_srli_epi16(b, 4), m));
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(c));
  }
  // 16 bytes: their low nibbles (elements d, d + 2, ...) and high nibbles.
  static void load_u4_pair(const uint8_t* codes, int d, V& lo, V& hi) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + d / 2));
    const __m128i m = _mm_set1_epi8(15);
    lo = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(b, m)));
    hi = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(b, 4), m)));
  }
  // 4 bytes: element d + i sits at bits 2i of the little-endian word. Lane i
  // shifted right by 2i holds code i in its low 2 bits and the next code in
  // bits 2-3; vpermps reads only the low 4 bits of its index, so a table of
  // 0, 1, 2, 3 repeated four times maps that index to the code as a float:
  // one instruction where a mask and a conversion took two (the same
  // values, exactly).
  static V load_u2(const uint8_t* codes, int d) {
    int32_t w;
    std::memcpy(&w, codes + d / 4, 4);
    const __m512i shifts =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512 codes_f32 = _mm512_setr_ps(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
    return _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_set1_epi32(w), shifts), codes_f32);
  }
  // Up to 16 values (a row's parameters at head_dim <= 256, group 32): one
  // masked load (the lanes past n are not read, so no fault past a buffer's
  // end) and one conversion, no loop; the 16 floats stored (out has room,
  // kMaxRowParams), where f16c_halves loops per row (3-6% of int8 / int4
  // decode, BM_DecodeAttentionStorage30Layers, Zen 4, 2026-11-29).
  static void halves(const uint16_t* h, int n, float* out) {
    if (n <= 16) {
      const __m256i x = _mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << n) - 1u), h);
      _mm512_storeu_ps(out, _mm512_cvtph_ps(x));
      return;
    }
    f16c_halves(h, n, out);
  }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  static float hmax(V v) { return _mm512_reduce_max_ps(v); }
  // Four horizontal sums at once: fold each to 256 bits, then two rounds of
  // pairwise adds and the two 128-bit halves.
  static void hsum4(const V* a, float* out) {
    __m256 y[4];
    for (int i = 0; i < 4; ++i)
      y[i] = _mm256_add_ps(_mm512_castps512_ps256(a[i]), _mm512_extractf32x8_ps(a[i], 1));
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(y[0], y[1]), _mm256_hadd_ps(y[2], y[3]));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
  }
  static V exp2(V x) { return exp2_taylor<Avx512>(x); }
  // p * 2^n by vscalefps; 0 where x < -126.
  static V pow2_scale(V x, V p, V n) {
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-126.0f), _CMP_GE_OQ);
    return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(p, n));
  }
  // bf16_round on each lane: add 0x7fff plus the kept part's lowest bit and
  // cut the low half; subnormals to signed zero.
  static V round_bf16(V x) {
    const __m512i b = _mm512_castps_si512(x);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    const __m512i r =
        _mm512_and_si512(_mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))),
                         _mm512_set1_epi32(static_cast<int>(0xffff0000u)));
    const __mmask16 sub = _mm512_testn_epi32_mask(b, _mm512_set1_epi32(0x7f800000));
    const __m512i sign = _mm512_and_si512(b, _mm512_set1_epi32(static_cast<int>(0x80000000u)));
    return _mm512_castsi512_ps(_mm512_mask_mov_epi32(r, sub, sign));
  }
};

}  // namespace
}  // namespace kvbench::attn
