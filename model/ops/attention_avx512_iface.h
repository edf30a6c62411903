// Internal to attention_avx512.cpp and attention_avx512_bf16.cpp: the
// AVX-512 vector interface of the shared attention algorithm
// (attention_impl.h). Included inside each file's target region, with
// internal linkage, so each file compiles its own copy.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "model/ops/attention_avx2_q8.h"
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
  // A Q4 group's sixteen values min + c x step (a multiply, then an add, as
  // load_row), one per lane: vpermps reads the low 4 bits of each index lane,
  // so a nibble indexes it directly.
  static V u4_table(float min, float step) {
    return _mm512_add_ps(
        _mm512_mul_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                      _mm512_set1_ps(step)),
        _mm512_set1_ps(min));
  }
  // load_u4_pair's codes looked up in a table: the 16 bytes widened once, the
  // low nibbles as they are (vpermps ignores bits 4-7) and the high ones
  // shifted down (lo: the low nibbles of bytes [d / 2, d / 2 + 16), elements
  // d, d + 2, ...; hi: the high ones). The same values as the codes converted,
  // multiplied and added: 4 instructions and the table's multiply and add,
  // where conversion, multiplies and adds took 12.
  static void lookup_u4_pair(const uint8_t* codes, int d, V table, V& lo, V& hi) {
    const __m512i b =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + d / 2)));
    lo = _mm512_permutexvar_ps(b, table);
    hi = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), table);
  }
  // 2-bit codes through a table (lookup_u2): 4 bytes, element d + i at bits
  // 2i of the little-endian word. Lane i shifted right by 2i holds code i in
  // its low 2 bits and the next code in bits 2-3; vpermps reads only the low
  // 4 bits of its index, so a table whose lanes c, c + 4, c + 8, c + 12 hold
  // one value per code maps that index to code i's value.
  static V lookup_u2(const uint8_t* codes, int d, V table) {
    int32_t w;
    std::memcpy(&w, codes + d / 4, 4);
    const __m512i shifts =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_set1_epi32(w), shifts), table);
  }
  // The codes 0, 1, 2, 3 in the lanes lookup_u2 reads code c from.
  static V u2_codes() { return _mm512_setr_ps(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3); }
  // The codes as floats, looked up in u2_codes (one instruction where a mask
  // and a conversion took two; the same values, exactly).
  static V load_u2(const uint8_t* codes, int d) { return lookup_u2(codes, d, u2_codes()); }
  // A Q2 group's four values min + c x step (a multiply, then an add, as
  // load_row): one vpermps per 16 codes where load_u2 then a multiply and
  // an add took three.
  static V u2_table(float min, float step) {
    return _mm512_add_ps(_mm512_mul_ps(u2_codes(), _mm512_set1_ps(step)), _mm512_set1_ps(min));
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
  // sizes up to 256; Q2 keys go to the AVX2 kernel (attention_avx2_q8.h:
  // vpmaddubsw, groups of 32, head sizes that are multiples of 64), which
  // every AVX-512 CPU runs; other shapes are summed in f32 (exact too,
  // slower).
  template <KvElement KE>
  static bool q8_int_kernel(int hd, int block) {
    if constexpr (KE == KvElement::Q2)
      return Avx2Q8::q8_int_kernel<KE>(hd, block);
    else
      return (KE == KvElement::Q8 || KE == KvElement::Q4) && block == 32 && hd % 64 == 0 &&
             hd <= 256;
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
    if constexpr (KE == KvElement::Q2) return Avx2Q8::q8_order<KE>(G, hd, w);
    for (int g = 0; g < G; ++g)
      for (int d0 = 0; d0 < hd; d0 += 64)
        for (int pos = 0; pos < 64; ++pos) {
          const int e = KE == KvElement::Q8 ? pos : pos < 32 ? 2 * pos : 2 * (pos - 32) + 1;
          w.qp[g * hd + d0 + pos] = w.qi[g * hd + d0 + e];
        }
    q8_span_constants(G, hd, w);
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
    if constexpr (KE == KvElement::Q2) return Avx2Q8::q8_scores<KE>(k, G, hd, j0, nk, w, s);
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
  // KIVI's K2 keys against an int8 query (attention_q8.h): head sizes
  // 64-256, whole 64-element spans (16 code bytes, element 4i + s at bits
  // 2s of byte i). The span's bytes are read in k2q8_key_order (the source
  // byte of each position), so that vpdpbusd's dwords 0 and 2 sum elements
  // of the span's first query block and dwords 1 and 3 of its second; the
  // 2-bit codes of shift s, (bytes >> 2s) & 3, meet the query's codes of
  // elements 4 order[p] + s (k2q8_prepare's qp, 16 bytes per shift).
  static bool k2q8_int_kernel(int hd) { return hd % 64 == 0 && hd <= 256; }
  // The max (add) over all 16 lanes of x in lanes 0-7 and of y in lanes
  // 8-15: both reductions in one chain of shuffles (exact in any order).
  static __m512 fold_pairs_max(__m512 x, __m512 y) {
    __m512 t = _mm512_max_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
    t = _mm512_max_ps(t, _mm512_shuffle_f32x4(t, t, _MM_SHUFFLE(2, 3, 0, 1)));
    t = _mm512_max_ps(t, _mm512_permute_ps(t, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm512_max_ps(t, _mm512_permute_ps(t, _MM_SHUFFLE(2, 3, 0, 1)));
  }
  static __m512i fold_pairs_add(__m512i x, __m512i y) {
    __m512i t = _mm512_add_epi32(_mm512_shuffle_i32x4(x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_i32x4(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
    t = _mm512_add_epi32(t, _mm512_shuffle_i32x4(t, t, _MM_SHUFFLE(2, 3, 0, 1)));
    t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_BADC));
    return _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_CDAB));
  }
  static __m512i k2q8_key_order() {
    return _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15));
  }
  // The reference's numbers (k2q8_prepare_ref), 16 elements at a time: r =
  // q x step, per block a and the codes (vdivps and round to nearest even,
  // as x / a and nearbyint; NaN to 0 before the max and after the
  // rounding), qm by fused multiply-adds in the reference's lanes and fold.
  // Then qp: the codes of each 16-element chunk as bytes in lanes ordered
  // (0, 2, 1, 3), each lane's bytes transposed to dwords by shift (bytes
  // s, s + 4, s + 8, s + 12), and the dwords transposed across lanes, so
  // lane s holds shift s's codes in k2q8_key_order.
  template <class W>
  static void k2q8_prepare(const float* qs, int G, int hd, const uint16_t* kp, W& w) {
    const int spans = hd / 64;
    const __m512 two = _mm512_set1_ps(2.0f);  // the codes' centre, Q2's (q8_center)
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    // The block's steps and centres (min + 2 step) once for all heads.
    alignas(64) float steps[256], centres[256];
    for (int d = 0; d < hd; d += 16) {
      const __m512 step = load_f16(kp + hd + d);
      _mm512_store_ps(steps + d, step);
      _mm512_store_ps(centres + d, _mm512_add_ps(load_f16(kp + d), _mm512_mul_ps(two, step)));
    }
    const __m512i by_shift =
        _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    const __m512i across = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (int g = 0; g < G; ++g) {
      __m512 qacc = _mm512_setzero_ps();
      for (int span = 0; span < spans; ++span) {
        __m512 r[4];
        for (int c = 0; c < 4; ++c) {
          const int d = 64 * span + 16 * c;
          const __m512 q = _mm512_loadu_ps(qs + g * hd + d);
          r[c] = _mm512_mul_ps(q, _mm512_load_ps(steps + d));
          qacc = _mm512_fmadd_ps(q, _mm512_load_ps(centres + d), qacc);
        }
        // Both blocks' max |r| at once (NaN as 0): folded across lanes,
        // [block 2 span x8 | block 2 span + 1 x8], then a = max / 127.
        __m512 m[2];
        for (int half = 0; half < 2; ++half) {
          m[half] = _mm512_setzero_ps();
          for (int c = 2 * half; c < 2 * half + 2; ++c)
            m[half] = _mm512_max_ps(m[half],
                                    _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r[c], r[c], _CMP_ORD_Q),
                                                        _mm512_abs_ps(r[c])));
        }
        const __m512 a = _mm512_div_ps(fold_pairs_max(m[0], m[1]), _mm512_set1_ps(127.0f));
        const __mmask16 positive = _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_GT_OQ);
        // a broadcast from its block's half; codes 0 where a is not > 0.
        const __m512 a_half[2] = {_mm512_shuffle_f32x4(a, a, 0x00),
                                  _mm512_shuffle_f32x4(a, a, 0xaa)};
        __m512i ri[4];
        for (int c = 0; c < 4; ++c) {
          const __m512 ab = a_half[c / 2];
          const __mmask16 use = c < 2 ? __mmask16(positive & 1 ? 0xffff : 0)
                                      : __mmask16(positive & 0x100 ? 0xffff : 0);
          const __m512 x = _mm512_roundscale_ps(_mm512_div_ps(r[c], ab),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
          const __mmask16 ord = _mm512_cmp_ps_mask(x, x, _CMP_ORD_Q) & use;
          ri[c] =
              _mm512_cvtps_epi32(_mm512_maskz_mov_ps(ord, _mm512_min_ps(_mm512_max_ps(x, lo), hi)));
        }
        const __m512i isum =
            fold_pairs_add(_mm512_add_epi32(ri[0], ri[1]), _mm512_add_epi32(ri[2], ri[3]));
        const int b = g * w.nb + 2 * span;
        w.a[b] = _mm512_cvtss_f32(a);
        w.a[b + 1] = _mm_cvtss_f32(_mm512_extractf32x4_ps(a, 2));
        w.isum[b] = _mm512_cvtsi512_si32(isum);
        w.isum[b + 1] = _mm_cvtsi128_si32(_mm512_extracti32x4_epi32(isum, 2));
        __m512i z = _mm512_castsi128_si512(_mm512_cvtepi32_epi8(ri[0]));
        z = _mm512_inserti32x4(z, _mm512_cvtepi32_epi8(ri[2]), 1);
        z = _mm512_inserti32x4(z, _mm512_cvtepi32_epi8(ri[1]), 2);
        z = _mm512_inserti32x4(z, _mm512_cvtepi32_epi8(ri[3]), 3);
        z = _mm512_permutexvar_epi32(across, _mm512_shuffle_epi8(z, by_shift));
        _mm512_storeu_si512(w.qp + g * hd + 64 * span, z);
      }
      const __m256 y = _mm256_add_ps(_mm512_castps512_ps256(qacc), _mm512_extractf32x8_ps(qacc, 1));
      __m128 x = _mm_add_ps(_mm256_castps256_ps128(y), _mm256_extractf128_ps(y, 1));
      x = _mm_add_ps(x, _mm_movehl_ps(x, x));
      x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 1));
      w.qm[g] = _mm_cvtss_f32(x);
    }
  }
  // Scores of keys [j0, j0 + n) of one K2 block into s[g * kKeyTile + j],
  // sixteen keys a pass (a pass past n repeats the last key and stores only
  // n). Vector v (0-3) holds keys v, v + 4, v + 8, v + 12 in its lanes; per
  // head, four vpdpbusd a vector (one per shift) leave per key its blocks'
  // two halves, which two unpack rounds add to [block 2 span] and [block 2
  // span + 1] of the sixteen keys in order. Then the reference's epilogue:
  // u = float(S - 2 I) x a per block, t = u + u', added to the earlier
  // spans' sum (kept in s), and qm at the last span.
  template <class W>
  static void k2q8_scores(const Rows& k, int G, int hd, int32_t j0, int32_t n, const W& w,
                          float* s) {
    const int spans = hd / 64;
    const __m512i order = k2q8_key_order();
    const __m512i three = _mm512_set1_epi8(3);
    for (int32_t j = 0; j < n; j += 16) {
      const uint8_t* rows[16];
      if (k.contiguous()) {  // by adds: a vectorised i x stride took 64-bit multiplies
        const uint8_t* p = k.data + (j0 + j) * k.stride;
        for (int i = 0; i < 16; ++i) {
          rows[i] = p;
          if (j + i + 1 < n) p += k.stride;
        }
      } else {
        for (int i = 0; i < 16; ++i) rows[i] = k.row(j0 + std::min(j + i, n - 1));
      }
      const __mmask16 keep =
          n - j >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1u);
      for (int span = 0; span < spans; ++span) {
        __m512i x[4][4];
        for (int v = 0; v < 4; ++v) {
          const auto bytes = [&](int i) {
            return _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[i] + 16 * span));
          };
          __m512i z = _mm512_castsi128_si512(bytes(v));
          z = _mm512_inserti32x4(z, bytes(v + 4), 1);
          z = _mm512_inserti32x4(z, bytes(v + 8), 2);
          z = _mm512_inserti32x4(z, bytes(v + 12), 3);
          z = _mm512_shuffle_epi8(z, order);
          x[v][0] = _mm512_and_si512(z, three);
          x[v][1] = _mm512_and_si512(_mm512_srli_epi16(z, 2), three);
          x[v][2] = _mm512_and_si512(_mm512_srli_epi16(z, 4), three);
          x[v][3] = _mm512_and_si512(_mm512_srli_epi16(z, 6), three);
        }
        for (int g = 0; g < G; ++g) {
          const int8_t* qp = w.qp + g * hd + 64 * span;
          __m512i acc[4];
          for (int v = 0; v < 4; ++v) acc[v] = _mm512_setzero_si512();
          for (int sh = 0; sh < 4; ++sh) {
            const __m512i q = _mm512_broadcast_i32x4(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(qp + 16 * sh)));
            for (int v = 0; v < 4; ++v) acc[v] = _mm512_dpbusd_epi32(acc[v], x[v][sh], q);
          }
          const __m512i p01 = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[0], acc[1]),
                                               _mm512_unpackhi_epi32(acc[0], acc[1]));
          const __m512i p23 = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[2], acc[3]),
                                               _mm512_unpackhi_epi32(acc[2], acc[3]));
          const int b = g * w.nb + 2 * span;
          const __m512i s0 =
              _mm512_sub_epi32(_mm512_unpacklo_epi64(p01, p23), _mm512_set1_epi32(2 * w.isum[b]));
          const __m512i s1 = _mm512_sub_epi32(_mm512_unpackhi_epi64(p01, p23),
                                              _mm512_set1_epi32(2 * w.isum[b + 1]));
          const __m512 u0 = _mm512_mul_ps(_mm512_cvtepi32_ps(s0), _mm512_set1_ps(w.a[b]));
          const __m512 u1 = _mm512_mul_ps(_mm512_cvtepi32_ps(s1), _mm512_set1_ps(w.a[b + 1]));
          __m512 t = _mm512_add_ps(u0, u1);
          float* out = s + g * kKeyTile + j;
          if (span > 0) t = _mm512_add_ps(_mm512_maskz_loadu_ps(keep, out), t);
          if (span == spans - 1) t = _mm512_add_ps(t, _mm512_set1_ps(w.qm[g]));
          _mm512_mask_storeu_ps(out, keep, t);
        }
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
