// AVX-512 kernels of the exact path (model/ops/exact_dot.h): weights decoded to
// f32 in registers, 32 elements (one legacy block, one K-quant sub-block) at a
// time, with the float steps of dequantize_row() in the same order, then
// multiplied with f32 activations by FMA into 16 lanes per (row, token).
//
// A tile takes four rows at once: with one token a single accumulator chain
// would wait on the FMA latency (two dependent FMAs per 32 elements); four
// independent chains keep the decode units busy instead.
// a * b + c must not be fused behind our back: dequantize_row() rounds the
// product before the sum. (GCC in ISO mode does not fuse.)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "model/ops/exact_dot.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <vector>

#include "model/ops/bytes.h"
#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")

#include "model/ops/with_count.h"

namespace kvbench::exact {
namespace {

KVBENCH_INLINE float f16(const uint8_t* p) {
  return _cvtsh_ss(load_u16(p));  // exact, as fp16_to_fp32
}
KVBENCH_INLINE __m512i bytes16(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
KVBENCH_INLINE __m512 to_f32(__m512i v) { return _mm512_cvtepi32_ps(v); }

// Each decoder: unit u (32 elements) of a row -> lo (elements 0..15 of the
// unit), hi (16..31), exactly as dequantize_row() computes them. Legacy
// decoders first convert the f16 scales of up to 16 blocks at once into a
// small array (Scales), so a block's scale is a broadcast from memory (a load,
// not a shuffle); the 4-bit codes then index a table of the block's 16 (or
// 32) possible values, built with dequantize_row()'s own float steps.
struct NoScales {
  static KVBENCH_INLINE void prepare(const uint8_t*, int64_t, int64_t, int) {}
};

// The first `count` (<= 16) of 16 blocks.
KVBENCH_INLINE __mmask16 first_blocks(int count) {
  return count >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << count) - 1);
}

// f32 copies of the f16 scales (d, and m where kMin: the f16 after d) of
// blocks u0 .. u0 + count, by one 16-lane gather of the 4 bytes at each
// block's start.
template <size_t kBlock, bool kMin>
struct DScales {
  alignas(64) float d[16];
  alignas(64) float m[kMin ? 16 : 1];
  KVBENCH_INLINE void prepare(const uint8_t* row, int64_t, int64_t u0, int count) {
    const __m512i offsets =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(static_cast<int>(kBlock)));
    const __m512i g = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), first_blocks(count),
                                                  offsets, row + kBlock * u0, 1);
    _mm512_store_ps(d, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(g)));
    if constexpr (kMin)
      _mm512_store_ps(m, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(g, 16))));
  }
};

KVBENCH_INLINE __m512 iota(int first) {
  return _mm512_add_ps(_mm512_set1_ps(static_cast<float>(first)),
                       _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

// The 16 values of a 4-bit block's codes q = 0..15, with dequantize_row()'s
// float steps: (q - 8) * d (Q4_0), or q * d + m (kMin: Q4_1).
template <bool kMin, class S>
KVBENCH_INLINE __m512 q4_table(const S& s, int j) {
  const __m512 v = _mm512_mul_ps(iota(kMin ? 0 : -8), _mm512_set1_ps(s.d[j]));
  if constexpr (kMin) return _mm512_add_ps(v, _mm512_set1_ps(s.m[j]));
  return v;
}

// 16 bytes of 4-bit codes: low nibbles are elements 0..15, high nibbles
// 16..31, each looked up in the block's table of 16 values.
KVBENCH_INLINE void q4_lookup(const uint8_t* codes, __m512 table, __m512& lo, __m512& hi) {
  const __m512i q = bytes16(codes);
  lo = _mm512_permutexvar_ps(q, table);  // vpermps reads the low 4 bits of each index
  hi = _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table);
}

// Q4_0 (18 B): (q - 8) * d; Q4_1 (kMin, 20 B): q * d + m.
template <bool kMin>
struct Q4D {
  static constexpr size_t kBytes = kMin ? 20 : 18;
  using Scales = DScales<kBytes, kMin>;
  static KVBENCH_INLINE void load(const uint8_t* row, int64_t u, const Scales& s, int j, __m512& lo,
                                  __m512& hi) {
    q4_lookup(row + kBytes * u + (kMin ? 4 : 2), q4_table<kMin>(s, j), lo, hi);
  }
};

// The 5-bit codes of a Q5 block: low nibbles plus 16 where qh has the bit.
KVBENCH_INLINE void five_bit(const uint8_t* qs, uint32_t qh, __m512i& l, __m512i& h) {
  const __m512i q = bytes16(qs), sixteen = _mm512_set1_epi32(16);
  l = _mm512_and_si512(q, _mm512_set1_epi32(15));
  h = _mm512_srli_epi32(q, 4);
  l = _mm512_mask_add_epi32(l, static_cast<__mmask16>(qh), l, sixteen);
  h = _mm512_mask_add_epi32(h, static_cast<__mmask16>(qh >> 16), h, sixteen);
}

// Q5_0 (22 B): (q - 16) * d; Q5_1 (kMin, 24 B): q * d + m; q = 0..31 from
// two 16-entry tables.
template <bool kMin>
struct Q5D {
  static constexpr size_t kBytes = kMin ? 24 : 22;
  using Scales = DScales<kBytes, kMin>;
  static KVBENCH_INLINE void load(const uint8_t* row, int64_t u, const Scales& s, int j, __m512& lo,
                                  __m512& hi) {
    const uint8_t* b = row + kBytes * u;
    const __m512 d = _mm512_set1_ps(s.d[j]);
    __m512 t0, t1;
    if constexpr (kMin) {
      const __m512 m = _mm512_set1_ps(s.m[j]);
      t0 = _mm512_add_ps(_mm512_mul_ps(iota(0), d), m);
      t1 = _mm512_add_ps(_mm512_mul_ps(iota(16), d), m);
    } else {
      t0 = _mm512_mul_ps(iota(-16), d);
      t1 = _mm512_mul_ps(iota(0), d);
    }
    __m512i l, h;
    five_bit(b + (kMin ? 8 : 6), load_u32(b + (kMin ? 4 : 2)), l, h);
    lo = _mm512_permutex2var_ps(t0, l, t1);
    hi = _mm512_permutex2var_ps(t0, h, t1);
  }
};

// Q8_0 (34 B): q * d.
struct Q8_0D {
  using Scales = DScales<34, false>;
  static KVBENCH_INLINE void load(const uint8_t* row, int64_t u, const Scales& s, int j, __m512& lo,
                                  __m512& hi) {
    const uint8_t* b = row + 34 * u;
    const __m512 d = _mm512_set1_ps(s.d[j]);
    lo = _mm512_mul_ps(
        to_f32(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2)))), d);
    hi = _mm512_mul_ps(
        to_f32(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 18)))), d);
  }
};

// Planar rows (model/ops/planar.h): the same values from the same bytes, with
// the scales of 16 blocks one load from their plane.
KVBENCH_INLINE void convert_plane(const uint8_t* plane, int64_t u0, int count, float* out) {
  if (count == 16) {
    _mm512_store_ps(
        out, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(plane + 2 * u0))));
    return;
  }
  const __m256i h = _mm256_maskz_loadu_epi16(first_blocks(count), plane + 2 * u0);
  _mm512_store_ps(out, _mm512_cvtph_ps(h));
}

// Planar Q4_0 / Q4_1: codes of block u at 16u, then the d plane (and m plane).
template <bool kMin>
struct PlanarQ4D {
  struct Scales {
    alignas(64) float d[16];
    alignas(64) float m[kMin ? 16 : 1];
    KVBENCH_INLINE void prepare(const uint8_t* row, int64_t nb, int64_t u0, int count) {
      convert_plane(row + 16 * nb, u0, count, d);
      if constexpr (kMin) convert_plane(row + 18 * nb, u0, count, m);
    }
  };
  static KVBENCH_INLINE void load(const uint8_t* row, int64_t u, const Scales& s, int j, __m512& lo,
                                  __m512& hi) {
    q4_lookup(row + 16 * u, q4_table<kMin>(s, j), lo, hi);
  }
};

// Planar Q8_0: per group of four blocks their elements 0-15, then their
// elements 16-31, as q + 128; then the d plane.
struct PlanarQ8_0D {
  struct Scales {
    alignas(64) float d[16];
    int64_t nb = 0;
    KVBENCH_INLINE void prepare(const uint8_t* row, int64_t n_blocks, int64_t u0, int count) {
      nb = n_blocks;
      convert_plane(row + 32 * n_blocks, u0, count, d);
    }
  };
  static KVBENCH_INLINE __m512 codes(const uint8_t* p, __m512 d) {
    const __m128i q =
        _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), _mm_set1_epi8(-128));
    return _mm512_mul_ps(to_f32(_mm512_cvtepi8_epi32(q)), d);
  }
  static KVBENCH_INLINE void load(const uint8_t* row, int64_t u, const Scales& s, int j, __m512& lo,
                                  __m512& hi) {
    const int64_t first = u & ~int64_t{3};
    const int64_t count = std::min<int64_t>(4, s.nb - first);
    const uint8_t* p = row + 32 * first + 16 * (u - first);
    const __m512 d = _mm512_set1_ps(s.d[j]);
    lo = codes(p, d);
    hi = codes(p + 16 * count, d);
  }
};

// Q4_K / Q5_K (144 / 176 B): sub-block k of 8; d1 = d * sc, m1 = dmin * m;
// x = d1 * q - m1. Sub-blocks 2c and 2c + 1 share the 32 bytes of chunk c
// (low and high nibbles); Q5_K's 5th bit of sub-block k is bit k of qh[l].
template <bool kFive>
struct QK45D {
  static constexpr size_t kBytes = kFive ? 176 : 144;
  using Scales = NoScales;
  static KVBENCH_INLINE void load(const uint8_t* row, int64_t u, const Scales&, int, __m512& lo,
                                  __m512& hi) {
    const uint8_t* b = row + kBytes * (u / 8);
    const int k = static_cast<int>(u % 8), c = k / 2;
    int sc, m;
    k4_scale_min(k, b + 4, &sc, &m);
    const __m512 d1 = _mm512_set1_ps(f16(b) * static_cast<float>(sc));
    const __m512 m1 = _mm512_set1_ps(f16(b + 2) * static_cast<float>(m));
    const uint8_t* q = b + (kFive ? 48 : 16) + 32 * c;
    const int shift = (k & 1) * 4;
    __m512i l = _mm512_and_si512(_mm512_srli_epi32(bytes16(q), shift), _mm512_set1_epi32(15));
    __m512i h = _mm512_and_si512(_mm512_srli_epi32(bytes16(q + 16), shift), _mm512_set1_epi32(15));
    if constexpr (kFive) {
      const __m512i bit = _mm512_set1_epi32(1 << k), sixteen = _mm512_set1_epi32(16);
      l = _mm512_mask_add_epi32(l, _mm512_test_epi32_mask(bytes16(b + 16), bit), l, sixteen);
      h = _mm512_mask_add_epi32(h, _mm512_test_epi32_mask(bytes16(b + 32), bit), h, sixteen);
    }
    lo = _mm512_sub_ps(_mm512_mul_ps(d1, to_f32(l)), m1);
    hi = _mm512_sub_ps(_mm512_mul_ps(d1, to_f32(h)), m1);
  }
};

// Q6_K (210 B): sub-block k of 8 = half k / 4, quarter k % 4 of that half;
// x = (d * scale) * (6-bit q - 32), one int8 scale per 16 elements.
struct Q6KD {
  using Scales = NoScales;
  static KVBENCH_INLINE void load(const uint8_t* row, int64_t u, const Scales&, int, __m512& lo,
                                  __m512& hi) {
    const uint8_t* b = row + 210 * (u / 8);
    const int k = static_cast<int>(u % 8), half = k / 4, quarter = k % 4;
    const uint8_t* ql = b + 64 * half + (quarter & 1) * 32;
    const uint8_t* qh = b + 128 + 32 * half;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192 + 8 * half + 2 * quarter);
    const float d = f16(b + 208);
    const int nib = (quarter >> 1) * 4, hib = 2 * quarter;
    const __m512i fifteen = _mm512_set1_epi32(15), three = _mm512_set1_epi32(3),
                  bias = _mm512_set1_epi32(32);
    auto decode = [&](int o) {
      const __m512i low = _mm512_and_si512(_mm512_srli_epi32(bytes16(ql + o), nib), fifteen);
      const __m512i high = _mm512_and_si512(_mm512_srli_epi32(bytes16(qh + o), hib), three);
      return to_f32(_mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(high, 4)), bias));
    };
    lo = _mm512_mul_ps(_mm512_set1_ps(d * static_cast<float>(sc[0])), decode(0));
    hi = _mm512_mul_ps(_mm512_set1_ps(d * static_cast<float>(sc[1])), decode(16));
  }
};

// Plain rows: any n, the last unit masked.
struct F32D {
  static KVBENCH_INLINE __m512 load16(const uint8_t* p) { return _mm512_loadu_ps(p); }
  static KVBENCH_INLINE __m512 mload16(const uint8_t* p, __mmask16 k) {
    return _mm512_maskz_loadu_ps(k, p);
  }
  static constexpr int kSize = 4;
};
struct F16D {
  static KVBENCH_INLINE __m512 load16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static KVBENCH_INLINE __m512 mload16(const uint8_t* p, __mmask16 k) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, p));
  }
  static constexpr int kSize = 2;
};
struct BF16D {
  static KVBENCH_INLINE __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static KVBENCH_INLINE __m512 load16(const uint8_t* p) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static KVBENCH_INLINE __m512 mload16(const uint8_t* p, __mmask16 k) {
    return widen(_mm256_maskz_loadu_epi16(k, p));
  }
  static constexpr int kSize = 2;
};
template <class P>
struct PlainD {
  static constexpr bool kPlain = true;
  using Scales = NoScales;
  static KVBENCH_INLINE void load(const uint8_t* row, int64_t u, const Scales&, int, __m512& lo,
                                  __m512& hi) {
    lo = P::load16(row + P::kSize * 32 * u);
    hi = P::load16(row + P::kSize * (32 * u + 16));
  }
  // Elements [32u, 32u + count) with count < 32; the rest 0.
  static KVBENCH_INLINE void load_tail(const uint8_t* row, int64_t u, int count, __m512& lo,
                                       __m512& hi) {
    lo = P::mload16(row + P::kSize * 32 * u, mask(count));
    hi = P::mload16(row + P::kSize * (32 * u + 16), mask(count - 16));
  }
  static KVBENCH_INLINE __mmask16 mask(int count) {
    return count <= 0 ? 0 : count >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << count) - 1);
  }
};

template <class D>
constexpr bool is_plain() {
  if constexpr (requires { D::kPlain; }) return true;
  return false;
}

// The lane fold of exact_dot_reference: l + 8, l + 4, l + 2, l + 1.
KVBENCH_INLINE float fold(__m512 acc) {
  const __m256 h8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
  const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
  const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
  return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

// NR rows x NT tokens: acc[r][t] += w_r * x_t over the row, 32 elements a step.
template <class D, int NR, int NT>
void micro(const uint8_t* w, size_t w_stride, const float* x, int64_t ldx, int64_t n, float* out,
           int64_t ldo) {
  __m512 acc[NR][NT];
  KVBENCH_UNROLL for (int r = 0; r < NR; ++r) {
    KVBENCH_UNROLL for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  const int64_t units = n / 32;
  typename D::Scales scales[NR];
  for (int64_t u0 = 0; u0 < units; u0 += 16) {
    const int count = static_cast<int>(std::min<int64_t>(16, units - u0));
    KVBENCH_UNROLL for (int r = 0; r < NR; ++r) scales[r].prepare(w + r * w_stride, units, u0,
                                                                  count);
    for (int j = 0; j < count; ++j) {
      const int64_t u = u0 + j;
      __m512 lo[NR], hi[NR];
      KVBENCH_UNROLL for (int r = 0; r < NR; ++r)
          D::load(w + r * w_stride, u, scales[r], j, lo[r], hi[r]);
      KVBENCH_UNROLL for (int t = 0; t < NT; ++t) {
        const __m512 x0 = _mm512_loadu_ps(x + t * ldx + 32 * u);
        const __m512 x1 = _mm512_loadu_ps(x + t * ldx + 32 * u + 16);
        KVBENCH_UNROLL for (int r = 0; r < NR; ++r) {
          acc[r][t] = _mm512_fmadd_ps(lo[r], x0, acc[r][t]);
          acc[r][t] = _mm512_fmadd_ps(hi[r], x1, acc[r][t]);
        }
      }
    }
  }
  if constexpr (is_plain<D>()) {
    const int count = static_cast<int>(n - 32 * units);
    if (count > 0) {
      const __mmask16 k0 = D::mask(count), k1 = D::mask(count - 16);
      __m512 lo[NR], hi[NR];
      KVBENCH_UNROLL for (int r = 0; r < NR; ++r)
          D::load_tail(w + r * w_stride, units, count, lo[r], hi[r]);
      KVBENCH_UNROLL for (int t = 0; t < NT; ++t) {
        const __m512 x0 = _mm512_maskz_loadu_ps(k0, x + t * ldx + 32 * units);
        const __m512 x1 = _mm512_maskz_loadu_ps(k1, x + t * ldx + 32 * units + 16);
        // Lanes past the row are left as they are, as in the reference.
        KVBENCH_UNROLL for (int r = 0; r < NR; ++r) {
          acc[r][t] = _mm512_mask3_fmadd_ps(lo[r], x0, acc[r][t], k0);
          acc[r][t] = _mm512_mask3_fmadd_ps(hi[r], x1, acc[r][t], k1);
        }
      }
    }
  } else {
    assert(n % 32 == 0);
  }
  KVBENCH_UNROLL for (int r = 0; r < NR; ++r) {
    KVBENCH_UNROLL for (int t = 0; t < NT; ++t) out[t * ldo + r] = fold(acc[r][t]);
  }
}

template <class D, int NT>
void rows_nt(const uint8_t* w, size_t w_stride, int64_t n_rows, const float* x, int64_t ldx,
             int64_t n, float* out, int64_t ldo) {
  int64_t r = 0;
  for (; r + 4 <= n_rows; r += 4) {
    prefetch_rows_ahead(w, w_stride, n_rows, r, 4);  // weights stream from memory once per token
    micro<D, 4, NT>(w + r * w_stride, w_stride, x, ldx, n, out + r, ldo);
  }
  for (; r < n_rows; ++r) micro<D, 1, NT>(w + r * w_stride, w_stride, x, ldx, n, out + r, ldo);
}

// Tokens four at a time: up to 16 accumulators and 8 decoded registers.
template <class D>
void rows(const uint8_t* w, size_t w_stride, int64_t n_rows, const float* x, int64_t ldx,
          int64_t n_x, int64_t n, float* out, int64_t ldo) {
  for (int64_t t = 0; t < n_x; t += 4) {
    const float* xt = x + t * ldx;
    float* ot = out + t * ldo;
    with_count<4>(n_x - t,
                  [&]<int T>() { rows_nt<D, T>(w, w_stride, n_rows, xt, ldx, n, ot, ldo); });
  }
}

// Types without a decoder here (Q2_K, Q3_K, F64, Q8_1, Q8_K): the scalar
// dequantize_row(), then the f32 kernel on the decoded row.
void generic_rows(GgmlType type, const uint8_t* w, size_t w_stride, int64_t n_rows, const float* x,
                  int64_t ldx, int64_t n_x, int64_t n, float* out, int64_t ldo) {
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(n));
  for (int64_t r = 0; r < n_rows; ++r) {
    dequantize_row(type, w + r * w_stride, row.data(), n);
    rows<PlainD<F32D>>(reinterpret_cast<const uint8_t*>(row.data()), 0, 1, x, ldx, n_x, n, out + r,
                       ldo);
  }
}

// Calls f.template operator()<D>() with the decoder of `type`; false when
// this file has none for it. F32 rows have one too, but only tile uses it:
// dequantize leaves them to dequantize_row (a copy).
template <class F>
bool with_decoder(GgmlType type, F&& f) {
  switch (type) {
    case GgmlType::Q4_0:
      return f.template operator()<Q4D<false>>(), true;
    case GgmlType::Q4_1:
      return f.template operator()<Q4D<true>>(), true;
    case GgmlType::Q5_0:
      return f.template operator()<Q5D<false>>(), true;
    case GgmlType::Q5_1:
      return f.template operator()<Q5D<true>>(), true;
    case GgmlType::Q8_0:
      return f.template operator()<Q8_0D>(), true;
    case GgmlType::Q4_K:
      return f.template operator()<QK45D<false>>(), true;
    case GgmlType::Q5_K:
      return f.template operator()<QK45D<true>>(), true;
    case GgmlType::Q6_K:
      return f.template operator()<Q6KD>(), true;
    case GgmlType::F16:
      return f.template operator()<PlainD<F16D>>(), true;
    case GgmlType::BF16:
      return f.template operator()<PlainD<BF16D>>(), true;
    default:
      return false;
  }
}

void tile(GgmlType type, const uint8_t* w, size_t w_stride, int64_t n_rows, const float* x,
          int64_t ldx, int64_t n_x, int64_t n, float* out, int64_t ldo) {
  if (type == GgmlType::F32)
    return rows<PlainD<F32D>>(w, w_stride, n_rows, x, ldx, n_x, n, out, ldo);
  if (!with_decoder(type,
                    [&]<class D>() { rows<D>(w, w_stride, n_rows, x, ldx, n_x, n, out, ldo); }))
    generic_rows(type, w, w_stride, n_rows, x, ldx, n_x, n, out, ldo);
}

void planar_tile(GgmlType type, const uint8_t* w, size_t w_stride, int64_t n_rows, const float* x,
                 int64_t ldx, int64_t n_x, int64_t n, float* out, int64_t ldo) {
  switch (type) {
    case GgmlType::Q4_0:
      return rows<PlanarQ4D<false>>(w, w_stride, n_rows, x, ldx, n_x, n, out, ldo);
    case GgmlType::Q4_1:
      return rows<PlanarQ4D<true>>(w, w_stride, n_rows, x, ldx, n_x, n, out, ldo);
    case GgmlType::Q8_0:
      return rows<PlanarQ8_0D>(w, w_stride, n_rows, x, ldx, n_x, n, out, ldo);
    default:
      assert(false && "planar_tile: no planar layout");
      return;
  }
}

template <class D>
void decode_row(const uint8_t* src, float* dst, int64_t n) {
  const int64_t units = n / 32;
  typename D::Scales scales;
  for (int64_t u0 = 0; u0 < units; u0 += 16) {
    const int count = static_cast<int>(std::min<int64_t>(16, units - u0));
    scales.prepare(src, units, u0, count);
    for (int j = 0; j < count; ++j) {
      __m512 lo, hi;
      D::load(src, u0 + j, scales, j, lo, hi);
      _mm512_storeu_ps(dst + 32 * (u0 + j), lo);
      _mm512_storeu_ps(dst + 32 * (u0 + j) + 16, hi);
    }
  }
  if constexpr (is_plain<D>()) {
    const int count = static_cast<int>(n - 32 * units);
    if (count > 0) {
      __m512 lo, hi;
      D::load_tail(src, units, count, lo, hi);
      _mm512_mask_storeu_ps(dst + 32 * units, D::mask(count), lo);
      _mm512_mask_storeu_ps(dst + 32 * units + 16, D::mask(count - 16), hi);
    }
  }
}

void dequantize(GgmlType type, const uint8_t* src, float* dst, int64_t n) {
  if (!with_decoder(type, [&]<class D>() { decode_row<D>(src, dst, n); }))
    dequantize_row(type, src, dst, n);
}

}  // namespace
}  // namespace kvbench::exact

KVBENCH_TARGET_END()

namespace kvbench::exact {
const Kernels* avx512_kernels() {
  static const Kernels k{dequantize, tile, planar_tile};
  return &k;
}
}  // namespace kvbench::exact

#endif  // x86-64
