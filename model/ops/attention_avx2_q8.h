// Internal to attention_avx2.cpp: the AVX2 integer kernels of the
// int8-query scores (attention_q8.h: Q8, Q4 and Q2 keys, and KIVI's K2
// keys), a base of that file's vector interface (Avx2). Included inside
// its target region (AVX2, FMA, F16C), with internal linkage.
//
// AVX2 has no vpdpbusd. vpmaddubsw multiplies 32 unsigned bytes by 32
// signed ones and adds adjacent products into 16 s16, saturating; vpmaddwd
// by ones adds those pairs into 8 s32 (exact). The sums are exact when no
// pair of products passes 32767, which holds for every code the kernels
// can meet:
//  - query codes are in [-127, 127]: q8_quantize_query and k2q8_prepare
//    (below, the reference's numbers) clamp to it (-128 never occurs);
//  - Q4 codes 0-15 and Q2 / K2 codes 0-3 are the unsigned side as stored: a
//    pair is at most 2 x 15 x 127 = 3810 (2-bit: 762);
//  - Q8 codes are signed, [-127, 127] from the codec, but a row from
//    elsewhere may hold -128: |c| is the unsigned side (vpabsb gives 0x80
//    for -128, which read unsigned is 128) and the query's code takes c's
//    sign (vpsignb: -q stays in [-127, 127]; 0 where c is 0), so
//    |c| x (sign(c) q) = c q and a pair is at most 2 x 128 x 127 = 32512.
//    (The AVX-512 kernel offsets Q8 codes by 128 instead: a pair of 255 x
//    127 would saturate here.)
// The s32 sums that follow are far from overflow (a block: 32 x 128 x 127).
//
// A 64-element span (two blocks of 32, b = 2 span and b + 1) is read as two
// vectors of codes whose 128-bit lane 0 holds 16 elements of block b and
// lane 1 16 of block b + 1; the query's codes are put in the same order once
// per decode block (q8_order: qp). So per key and head the two products
// summed by vpmaddwd leave [block b x4 | block b + 1 x4] partial sums, and
// three vphaddd add four keys' to [block b: keys 0-3 | block b + 1: keys
// 0-3], the AVX-512 kernel's layout, where its epilogue follows.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "model/ops/attention_kernels.h"
#include "model/ops/simd_avx2.h"

namespace kvbench::attn {
namespace {

struct Avx2Q8 {
  // Q8, Q4 and Q2 keys in groups of 32 (the storages' default) and whole
  // 64-element spans; other shapes are summed in f32 (exact too, slower).
  template <KvElement KE>
  static bool q8_int_kernel(int hd, int block) {
    return q8_key(KE) && block == 32 && hd % 64 == 0;
  }

  // The element (in its block of 32) at byte p of a lane of 16 in vector v
  // (0 or 1) of a span's codes (q8_span_codes):
  //  - Q8: elements 16 v + p, element order, lanes the blocks' halves;
  //  - Q4: 2 p + v: low nibbles (v = 0) are the even elements, high ones
  //    the odd (a span's 32 bytes, bytes 0-15 block b, 16-31 block b + 1);
  //  - Q2: 4 (p % 8) + 2 (p / 8) + v: byte i of a block's 8 holds elements
  //    4i + s at bits 2s; lane bytes 0-7 are its bits 0-1 (v = 0) or 2-3,
  //    bytes 8-15 its bits 4-5 or 6-7.
  template <KvElement KE>
  static constexpr int q8_element(int v, int p) {
    if constexpr (KE == KvElement::Q8)
      return 16 * v + p;
    else if constexpr (KE == KvElement::Q4)
      return 2 * p + v;
    else
      return 4 * (p % 8) + 2 * (p / 8) + v;
  }

  // Span `span`'s codes of a row as vpmaddubsw's unsigned bytes c[0], c[1]
  // (q8_element's order). Q8: |codes|, and the codes themselves in sg (their
  // signs go to the query's codes).
  template <KvElement KE>
  static void q8_span_codes(const uint8_t* row, int span, __m256i* c, __m256i* sg) {
    if constexpr (KE == KvElement::Q8) {
      const uint8_t* p = row + 64 * span;
      sg[0] = _mm256_inserti128_si256(_mm256_castsi128_si256(load128(p)), load128(p + 32), 1);
      sg[1] = _mm256_inserti128_si256(_mm256_castsi128_si256(load128(p + 16)), load128(p + 48), 1);
      c[0] = _mm256_abs_epi8(sg[0]);
      c[1] = _mm256_abs_epi8(sg[1]);
    } else if constexpr (KE == KvElement::Q4) {
      const __m256i b = load256(row + 32 * span);
      const __m256i m = _mm256_set1_epi8(15);
      c[0] = _mm256_and_si256(b, m);
      c[1] = _mm256_and_si256(_mm256_srli_epi16(b, 4), m);
    } else {
      // [bytes 0-7 | bytes 8-15] (block b | b + 1) each followed by the
      // same bytes shifted right by 4 (per 16 bits: the next byte's bits
      // land above bit 3, which the masks clear).
      const __m256i x = _mm256_broadcastsi128_si256(load128(row + 16 * span));
      const __m256i x4 = _mm256_srli_epi16(x, 4);
      const __m256i y =
          _mm256_blend_epi32(_mm256_unpacklo_epi64(x, x4), _mm256_unpackhi_epi64(x, x4), 0xf0);
      const __m256i m = _mm256_set1_epi8(3);
      c[0] = _mm256_and_si256(y, m);
      c[1] = _mm256_and_si256(_mm256_srli_epi16(y, 2), m);
    }
  }

  // The query's codes in q8_span_codes' order (qp: per head and span 64
  // bytes, vector 0 then 1), and per head and span the epilogue's
  // constants as vectors: [a_b x4 | a_b+1 x4] and [Q_b x4 | Q_b+1 x4] for
  // the span's blocks b = 2 span, 2 span + 1 (in qf, which only the f32
  // sums use; the AVX-512 kernel's layout).
  template <KvElement KE>
  static void q8_order(int G, int hd, Q8Work& w) {
    for (int g = 0; g < G; ++g)
      for (int d0 = 0; d0 < hd; d0 += 64)
        for (int pos = 0; pos < 64; ++pos) {
          const int v = pos / 32, lane = pos % 32 / 16, p = pos % 16;
          w.qp[g * hd + d0 + pos] = w.qi[g * hd + d0 + 32 * lane + q8_element<KE>(v, p)];
        }
    q8_span_constants(G, hd, w);
  }

  // The span's two blocks' parameters of four keys as [block b: keys 0-3 |
  // block b + 1: keys 0-3], f16 -> f32 (exact): Q8 scales in steps; Q4 /
  // Q2 steps and centred mins m + z t (attention_q8.h: z t is exact, one
  // rounding as the reference's).
  template <KvElement KE>
  static void q8_span_params(const uint8_t* const* rows, int hd, int span, __m256& steps,
                             __m256& mins) {
    if constexpr (KE == KvElement::Q8) {
      int32_t h[4];  // the keys' scales of blocks b, b + 1
      for (int kb = 0; kb < 4; ++kb) std::memcpy(&h[kb], rows[kb] + hd + 4 * span, 4);
      const __m256 f = _mm256_cvtph_ps(_mm_setr_epi32(h[0], h[1], h[2], h[3]));
      steps = _mm256_permutevar8x32_ps(f, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
      mins = _mm256_setzero_ps();  // Q8 keys have no min
    } else {
      const int off = KE == KvElement::Q4 ? hd / 2 : hd / 4;
      int64_t h[4];  // the keys' (min, step) of blocks b, b + 1
      for (int kb = 0; kb < 4; ++kb) std::memcpy(&h[kb], rows[kb] + off + 8 * span, 8);
      // Lane 0 (min, step) of block b for two keys, lane 1 block b + 1.
      const auto two = [&](int k0) {
        return _mm256_cvtph_ps(
            _mm_unpacklo_epi32(_mm_cvtsi64_si128(h[k0]), _mm_cvtsi64_si128(h[k0 + 1])));
      };
      const __m256 t01 = two(0), t23 = two(2);
      steps = _mm256_shuffle_ps(t01, t23, _MM_SHUFFLE(3, 1, 3, 1));
      const __m256 z = _mm256_set1_ps(static_cast<float>(q8_center<KE>()));
      mins = _mm256_add_ps(_mm256_shuffle_ps(t01, t23, _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm256_mul_ps(z, steps));
    }
  }

  // A span's integer sums of four keys' codes c (Q8: |codes|, and the codes
  // sg) against the query's q0, q1 (qp): [block b: keys 0-3 | block b + 1:
  // keys 0-3], centres not yet taken off. Per key vpmaddubsw of each code
  // vector against the query's (Q8: the query's codes signed by the key's),
  // vpmaddwd by ones; three vphaddd across the four keys.
  template <KvElement KE>
  static __m256i q8_span_sums(const __m256i (*c)[2], const __m256i (*sg)[2], __m256i q0,
                              __m256i q1) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i p[4];
    for (int kb = 0; kb < 4; ++kb) {
      if constexpr (KE == KvElement::Q8) {
        // Two pairs of 32512 would pass 32767: each to s32 first.
        const __m256i d0 = _mm256_maddubs_epi16(c[kb][0], _mm256_sign_epi8(q0, sg[kb][0]));
        const __m256i d1 = _mm256_maddubs_epi16(c[kb][1], _mm256_sign_epi8(q1, sg[kb][1]));
        p[kb] = _mm256_add_epi32(_mm256_madd_epi16(d0, ones), _mm256_madd_epi16(d1, ones));
      } else {
        // 3810 x 2 fits in s16: one vpmaddwd for both.
        const __m256i d = _mm256_add_epi16(_mm256_maddubs_epi16(c[kb][0], q0),
                                           _mm256_maddubs_epi16(c[kb][1], q1));
        p[kb] = _mm256_madd_epi16(d, ones);
      }
    }
    return _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
  }

  // Scores of keys [j0, j0 + nk) into s[g * kKeyTile + j], four keys per
  // pass (a tile's last pass repeats its last key into columns the caller
  // masks), span by span: a span's codes and parameters are read once for
  // all heads, each head's sum so far kept in s. Per head the span's sums
  // z (q8_span_sums), then the reference's operations (attention_q8.h) on 4
  // keys at once: per block
  // S = z - centre x I (Q8: z), u = S (a x step) (Q8: S (a x scale)) and,
  // Q4 / Q2, u + (min + centre x step) x Q; per pair of blocks t = u + u',
  // the pairs summed in order.
  template <KvElement KE>
  static void q8_scores(const Rows& k, int G, int hd, int32_t j0, int32_t nk, Q8Work& w, float* s) {
    constexpr int centre = q8_center<KE>();
    const int spans = hd / 64;
    for (int32_t j = 0; j < nk; j += 4) {
      const uint8_t* rows[4];
      for (int kb = 0; kb < 4; ++kb) rows[kb] = k.row(j0 + std::min(j + kb, nk - 1));
      for (int span = 0; span < spans; ++span) {
        __m256i c[4][2], sg[4][2];
        for (int kb = 0; kb < 4; ++kb) q8_span_codes<KE>(rows[kb], span, c[kb], sg[kb]);
        __m256 steps, mins;
        q8_span_params<KE>(rows, hd, span, steps, mins);
        for (int g = 0; g < G; ++g) {
          const int8_t* qp = w.qp + g * hd + 64 * span;
          const __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qp));
          const __m256i q1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qp + 32));
          __m256i z = q8_span_sums<KE>(c, sg, q0, q1);
          const int b0 = g * w.nb + 2 * span;
          if constexpr (centre != 0)
            z = _mm256_sub_epi32(z, _mm256_setr_m128i(_mm_set1_epi32(centre * w.isum[b0]),
                                                      _mm_set1_epi32(centre * w.isum[b0 + 1])));
          const float* cst = w.qf + (g * spans + span) * 16;
          __m256 u =
              _mm256_mul_ps(_mm256_cvtepi32_ps(z), _mm256_mul_ps(_mm256_loadu_ps(cst), steps));
          if constexpr (KE != KvElement::Q8)
            u = _mm256_add_ps(u, _mm256_mul_ps(mins, _mm256_loadu_ps(cst + 8)));
          const __m128 t = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
          float* out = s + g * kKeyTile + j;
          _mm_storeu_ps(out, span == 0 ? t : _mm_add_ps(_mm_loadu_ps(out), t));
        }
      }
    }
  }

  // KIVI's K2 keys against an int8 query (attention_q8.h): whole 64-element
  // spans, query blocks of 32 (q8_k2_block). A K2 row's codes are laid out
  // as Q2's (element 4i + s at bits 2s of byte i), so they are read as Q2
  // codes and summed as Q2's; the query is made per block of tokens.
  static bool k2q8_int_kernel(int hd) { return hd % 64 == 0; }

  // The reference's numbers (k2q8_prepare_ref), 8 elements at a time: r =
  // q x step; per block a = max |r| / 127 (NaN as 0) and the codes (vdivps
  // and round to nearest even, as r / a and nearbyint; NaN to 0, clamped,
  // 0 where a is not > 0); qm by fused multiply-adds into the reference's
  // 16 lanes (elements c % 16 < 8 in one vector, >= 8 in the other) and
  // its fold. Then per head and span: qp, the codes in q8_element<Q2>'s
  // order (packed to bytes, whose 32-bit quads are elements 4i to 4i + 3,
  // quads put in order, each lane's 4 x 4 bytes transposed to dwords by
  // shift, and the shifts 0, 2 / 1, 3 brought to vectors 0 / 1), and in qf
  // [a_b x4 | a_b+1 x4] for the epilogue.
  static void k2q8_prepare(const float* qs, int G, int hd, const uint16_t* kp, Q8Work& w) {
    const int spans = hd / 64;
    // The codes' centre, Q2's: centres min + 2 step as the reference's.
    const __m256 two = _mm256_set1_ps(static_cast<float>(q8_center<KvElement::Q2>()));
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i quads = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i by_shift = _mm256_broadcastsi128_si256(
        _mm_setr_epi8(0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15));
    const auto halves8 = [](const uint16_t* h) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
    };
    for (int g = 0; g < G; ++g) {
      __m256 qm_lo = _mm256_setzero_ps(), qm_hi = _mm256_setzero_ps();
      for (int span = 0; span < spans; ++span) {
        __m256 r[8];  // elements 64 span + 8 m, m = 0-3 block b, 4-7 block b + 1
        for (int m = 0; m < 8; ++m) {
          const int d = 64 * span + 8 * m;
          const __m256 q = _mm256_loadu_ps(qs + g * hd + d);
          const __m256 step = halves8(kp + hd + d);
          r[m] = _mm256_mul_ps(q, step);
          const __m256 centre = _mm256_add_ps(halves8(kp + d), _mm256_mul_ps(two, step));
          if (m % 2 == 0)
            qm_lo = _mm256_fmadd_ps(q, centre, qm_lo);
          else
            qm_hi = _mm256_fmadd_ps(q, centre, qm_hi);
        }
        // Both blocks' max |r| (NaN as 0) folded to [block b x4 | block b + 1
        // x4] (exact in any order), then a = max / 127.
        __m256 mx[2];
        for (int h = 0; h < 2; ++h) {
          mx[h] = _mm256_setzero_ps();
          for (int m = 4 * h; m < 4 * h + 4; ++m)
            mx[h] = _mm256_max_ps(mx[h], _mm256_and_ps(_mm256_andnot_ps(sign, r[m]),
                                                       _mm256_cmp_ps(r[m], r[m], _CMP_ORD_Q)));
        }
        __m256 t = _mm256_max_ps(_mm256_permute2f128_ps(mx[0], mx[1], 0x20),
                                 _mm256_permute2f128_ps(mx[0], mx[1], 0x31));
        t = _mm256_max_ps(t, _mm256_permute_ps(t, _MM_SHUFFLE(1, 0, 3, 2)));
        t = _mm256_max_ps(t, _mm256_permute_ps(t, _MM_SHUFFLE(2, 3, 0, 1)));
        const __m256 a = _mm256_div_ps(t, _mm256_set1_ps(127.0f));
        // a broadcast from its block's half.
        const __m256 a_half[2] = {_mm256_permute2f128_ps(a, a, 0x00),
                                  _mm256_permute2f128_ps(a, a, 0x11)};
        __m256i codes[8], sums[2], bytes[2];
        for (int h = 0; h < 2; ++h) {
          const __m256 ab = a_half[h];
          const __m256 positive = _mm256_cmp_ps(ab, _mm256_setzero_ps(), _CMP_GT_OQ);
          for (int m = 4 * h; m < 4 * h + 4; ++m) {
            __m256 x = _mm256_round_ps(_mm256_div_ps(r[m], ab),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            x = _mm256_and_ps(x, _mm256_cmp_ps(x, x, _CMP_ORD_Q));
            x = _mm256_and_ps(_mm256_min_ps(_mm256_max_ps(x, lo), hi), positive);
            codes[m] = _mm256_cvtps_epi32(x);
          }
          sums[h] = _mm256_add_epi32(_mm256_add_epi32(codes[4 * h], codes[4 * h + 1]),
                                     _mm256_add_epi32(codes[4 * h + 2], codes[4 * h + 3]));
          // Bytes in [-127, 127] (the packs never saturate): dword quads
          // [0, 2, 4, 6 | 1, 3, 5, 7], then in order, then by shift:
          // [s0, s2, s1, s3 of quads 0-3 | the same of quads 4-7], then
          // [s0, s2 | s1, s3] of quads 0-7.
          const __m256i x =
              _mm256_packs_epi16(_mm256_packs_epi32(codes[4 * h], codes[4 * h + 1]),
                                 _mm256_packs_epi32(codes[4 * h + 2], codes[4 * h + 3]));
          bytes[h] = _mm256_permutevar8x32_epi32(
              _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(x, quads), by_shift), quads);
        }
        int8_t* qp = w.qp + g * hd + 64 * span;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qp),
                            _mm256_permute2x128_si256(bytes[0], bytes[1], 0x20));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qp + 32),
                            _mm256_permute2x128_si256(bytes[0], bytes[1], 0x31));
        // The blocks' code sums (exact in any order): [I_b, I_b+1, ...].
        __m256i x = _mm256_hadd_epi32(sums[0], sums[1]);
        x = _mm256_hadd_epi32(x, x);
        const __m128i isum =
            _mm_add_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
        const int b = g * w.nb + 2 * span;
        w.a[b] = _mm256_cvtss_f32(a);
        w.a[b + 1] = _mm_cvtss_f32(_mm256_extractf128_ps(a, 1));
        w.isum[b] = _mm_cvtsi128_si32(isum);
        w.isum[b + 1] = _mm_extract_epi32(isum, 1);
        _mm256_storeu_ps(w.qf + (g * spans + span) * 8, a);
      }
      // The reference's fold: lane i += lane i + 8, then + 4, + 2, + 1.
      const __m256 y = _mm256_add_ps(qm_lo, qm_hi);
      __m128 x = _mm_add_ps(_mm256_castps256_ps128(y), _mm256_extractf128_ps(y, 1));
      x = _mm_add_ps(x, _mm_movehl_ps(x, x));
      x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 1));
      w.qm[g] = _mm_cvtss_f32(x);
    }
  }

  // Scores of keys [j0, j0 + n) of one K2 block into s[g * kKeyTile + j],
  // four keys a pass (a pass past n repeats the last key and stores only
  // n: the columns after belong to the tile's next block), span by span as
  // q8_scores. Then the reference's epilogue: u = float(S - 2 I) x a per
  // block, t = u + u', added to the earlier spans' sum (kept in s), and qm
  // at the last span.
  static void k2q8_scores(const Rows& k, int G, int hd, int32_t j0, int32_t n, const Q8Work& w,
                          float* s) {
    constexpr int centre = q8_center<KvElement::Q2>();
    const int spans = hd / 64;
    for (int32_t j = 0; j < n; j += 4) {
      const uint8_t* rows[4];
      for (int kb = 0; kb < 4; ++kb) rows[kb] = k.row(j0 + std::min(j + kb, n - 1));
      const bool whole = n - j >= 4;
      const __m128i keep = _mm_cmpgt_epi32(_mm_set1_epi32(n - j), _mm_setr_epi32(0, 1, 2, 3));
      for (int span = 0; span < spans; ++span) {
        __m256i c[4][2], sg[4][2];
        for (int kb = 0; kb < 4; ++kb) q8_span_codes<KvElement::Q2>(rows[kb], span, c[kb], sg[kb]);
        for (int g = 0; g < G; ++g) {
          const int8_t* qp = w.qp + g * hd + 64 * span;
          const __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qp));
          const __m256i q1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qp + 32));
          const int b0 = g * w.nb + 2 * span;
          const __m256i z =
              _mm256_sub_epi32(q8_span_sums<KvElement::Q2>(c, sg, q0, q1),
                               _mm256_setr_m128i(_mm_set1_epi32(centre * w.isum[b0]),
                                                 _mm_set1_epi32(centre * w.isum[b0 + 1])));
          const __m256 u =
              _mm256_mul_ps(_mm256_cvtepi32_ps(z), _mm256_loadu_ps(w.qf + (g * spans + span) * 8));
          __m128 t = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
          float* out = s + g * kKeyTile + j;
          if (span > 0) t = _mm_add_ps(whole ? _mm_loadu_ps(out) : _mm_maskload_ps(out, keep), t);
          if (span == spans - 1) t = _mm_add_ps(t, _mm_set1_ps(w.qm[g]));
          if (whole)
            _mm_storeu_ps(out, t);
          else
            _mm_maskstore_ps(out, keep, t);
        }
      }
    }
  }
};

}  // namespace
}  // namespace kvbench::attn
