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
  static V load_i32(const int32_t* p) { return _mm512_cvtepi32_ps(_mm512_loadu_si512(p)); }

  // The int8-query scores' integer kernel (attention_q8.h): vpdpbusd, 64
  // unsigned key codes against 64 int8 query codes per instruction, four
  // keys at a time, the epilogue in registers. Takes Q8 and Q4 keys in
  // groups of 32 (the storages' default) and whole 64-element spans, head
  // sizes up to 256; other shapes and Q2 keys are summed in f32 (exact too,
  // slower).
  template <KvElement KE>
  static bool q8_int_kernel(int hd, int block) {
    return (KE == KvElement::Q8 || KE == KvElement::Q4) && block == 32 && hd % 64 == 0 && hd <= 256;
  }
  // A 64-element span's codes as vpdpbusd's unsigned bytes. Q8: c + 128
  // (the sign bit flipped; 128 x the query's block sums come back off),
  // element order. Q4: the span's 32 bytes' low nibbles, then their high
  // nibbles: element 2i at byte i, 2i + 1 at byte 32 + i (q8_order puts
  // the query in the same order).
  template <KvElement KE>
  static __m512i q8_span_codes(const uint8_t* row, int span) {
    if constexpr (KE == KvElement::Q8) {
      return _mm512_xor_si512(_mm512_loadu_si512(row + 64 * span), _mm512_set1_epi8(-128));
    } else {
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32 * span));
      const __m256i m = _mm256_set1_epi8(15);
      return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(b, m)),
                                _mm256_and_si256(_mm256_srli_epi16(b, 4), m), 1);
    }
  }
  // The query's codes in q8_span_codes' order (qp), and per head and span
  // the epilogue's constants as vectors: [a_b x4 | a_b+1 x4] and [Q_b x4 |
  // Q_b+1 x4] for the span's two blocks b = 2 span, 2 span + 1 (in qf,
  // which only the f32 sums use).
  template <KvElement KE, class W>
  static void q8_order(int G, int hd, W& w) {
    for (int g = 0; g < G; ++g)
      for (int d0 = 0; d0 < hd; d0 += 64) {
        for (int pos = 0; pos < 64; ++pos) {
          const int e = KE == KvElement::Q8 ? pos : pos < 32 ? 2 * pos : 2 * (pos - 32) + 1;
          w.qp[g * hd + d0 + pos] = w.qi[g * hd + d0 + e];
        }
        const int b = d0 / 32;
        float* c = w.qf + (g * (hd / 64) + d0 / 64) * 16;
        for (int i = 0; i < 4; ++i) {
          c[i] = w.a[g * w.nb + b];
          c[4 + i] = w.a[g * w.nb + b + 1];
          c[8 + i] = w.qsum[g * w.nb + b];
          c[12 + i] = w.qsum[g * w.nb + b + 1];
        }
      }
  }
  // Scores of keys [j0, j0 + nk) into s[g * kKeyTile + j], four keys per
  // pass (a tile's last pass repeats its last key into columns the caller
  // masks). Per span and head: four vpdpbusd give 16 lanes per key, each the
  // sum of 4 products; an unpack tree adds them to one lane per (16-element
  // chunk, key), y's 128-bit lane c holding chunk c's sums of the four
  // keys, and z = [block 2 span | block 2 span + 1] x 4 keys. Then the
  // reference's operations (attention_q8.h) on 4 keys at once: per block
  // u = S (a x step) (Q8: S (a x scale)) and v = (min + 8 step) x Q, per pair of
  // blocks t = (u + v) + (u' + v'), the pairs summed in order. A key's
  // codes and parameters are read once for all heads: hd <= 256.
  template <KvElement KE, class W>
  static void q8_scores(const Rows& k, int G, int hd, int32_t j0, int32_t nk, W& w, float* s) {
    const int spans = hd / 64;
    for (int32_t j = 0; j < nk; j += 4) {
      const uint8_t* rows[4];
      for (int kb = 0; kb < 4; ++kb) rows[kb] = k.row(j0 + std::min(j + kb, nk - 1));
      __m512i c[4][4];
      // The spans' two blocks' parameters of the four keys, f16 -> f32: Q4
      // mins [b | b+1] and steps [b | b+1], Q8 scales [b | b+1].
      __m256 mins[4], steps[4];
      for (int span = 0; span < spans; ++span) {
        for (int kb = 0; kb < 4; ++kb) c[span][kb] = q8_span_codes<KE>(rows[kb], span);
        if constexpr (KE == KvElement::Q4) {
          int64_t h[4];
          for (int kb = 0; kb < 4; ++kb) std::memcpy(&h[kb], rows[kb] + hd / 2 + 8 * span, 8);
          const __m512 f = _mm512_cvtph_ps(_mm256_setr_epi64x(h[0], h[1], h[2], h[3]));
          const __m512 t = _mm512_permutexvar_ps(
              _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15), f);
          steps[span] = _mm512_extractf32x8_ps(t, 1);
          // The centred min m + 8 t (attention_q8.h): 8 t is exact.
          mins[span] = _mm256_add_ps(_mm512_castps512_ps256(t),
                                     _mm256_mul_ps(_mm256_set1_ps(8.0f), steps[span]));
        } else {
          int32_t h[4];
          for (int kb = 0; kb < 4; ++kb) std::memcpy(&h[kb], rows[kb] + hd + 4 * span, 4);
          const __m256 f = _mm256_cvtph_ps(_mm_setr_epi32(h[0], h[1], h[2], h[3]));
          steps[span] = _mm256_permutevar8x32_ps(f, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
        }
      }
      for (int g = 0; g < G; ++g) {
        __m128 r = _mm_setzero_ps();
        for (int span = 0; span < spans; ++span) {
          const __m512i q = _mm512_loadu_si512(w.qp + g * hd + 64 * span);
          __m512i a[4];
          for (int kb = 0; kb < 4; ++kb)
            a[kb] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), c[span][kb], q);
          const __m512i x0 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[0], a[1]),
                                              _mm512_unpackhi_epi32(a[0], a[1]));
          const __m512i x1 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2], a[3]),
                                              _mm512_unpackhi_epi32(a[2], a[3]));
          __m512i y =
              _mm512_add_epi32(_mm512_unpacklo_epi64(x0, x1), _mm512_unpackhi_epi64(x0, x1));
          // Q4: block 2 span = chunks 0 + 2 (the evens and odds of elements
          // 0-31), block 2 span + 1 = chunks 1 + 3. Q8: chunks 0 + 1 and
          // 2 + 3, brought to the same places first.
          if constexpr (KE == KvElement::Q8)
            y = _mm512_shuffle_i64x2(y, y, _MM_SHUFFLE(3, 1, 2, 0));
          __m256i z = _mm256_add_epi32(_mm512_castsi512_si256(y), _mm512_extracti64x4_epi64(y, 1));
          const float* cst = w.qf + (g * spans + span) * 16;
          {
            // The codes' offset: Q8's + 128 (q8_span_codes), Q4's centre 8.
            const int off = KE == KvElement::Q8 ? 128 : 8;
            const int b0 = g * w.nb + 2 * span;
            z = _mm256_sub_epi32(z, _mm256_setr_m128i(_mm_set1_epi32(off * w.isum[b0]),
                                                      _mm_set1_epi32(off * w.isum[b0 + 1])));
          }
          __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(z),
                                   _mm256_mul_ps(_mm256_loadu_ps(cst), steps[span]));
          if constexpr (KE == KvElement::Q4)
            u = _mm256_add_ps(u, _mm256_mul_ps(mins[span], _mm256_loadu_ps(cst + 8)));
          const __m128 t = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
          r = span == 0 ? t : _mm_add_ps(r, t);
        }
        _mm_storeu_ps(s + g * kKeyTile + j, r);
      }
    }
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
