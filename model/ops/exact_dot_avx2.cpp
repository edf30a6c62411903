// AVX2 kernels of the exact path (model/ops/exact_dot.h), for machines without
// AVX-512. The dot product keeps the reference's 16 lanes in two 8-lane
// registers (lanes 0..7, 8..15). The legacy types (Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0) and Q4_K, Q5_K, Q6_K (every matrix of SmolLM2 and Gemma 3) are
// decoded in registers, 8 elements at a time with dequantize_row()'s float
// steps (a product, then a sum: never fused), two rows at once in decode; the
// other types go through the scalar dequantize_row() into a buffer of one row.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "model/ops/exact_dot.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "model/ops/bytes.h"
#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx2,fma,f16c")

namespace kvbench::exact {
namespace {

// 8-lane mask of the first `count` lanes (count may be <= 0 or >= 8).
__m256i first_lanes(int64_t count) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(count, 8))),
                            index);
}

// The lane fold of exact_dot_reference on lanes 0..7 (lo) and 8..15 (hi).
float fold(__m256 lo, __m256 hi) {
  const __m256 h8 = _mm256_add_ps(lo, hi);
  const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
  const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
  return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

float dot(const float* w, const float* x, int64_t n) {
  __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a);
    b = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), b);
  }
  if (i < n) {  // lanes past the row keep their sums: blend instead of adding 0 * 0
    const __m256i m0 = first_lanes(n - i), m1 = first_lanes(n - i - 8);
    const __m256 fa =
        _mm256_fmadd_ps(_mm256_maskload_ps(w + i, m0), _mm256_maskload_ps(x + i, m0), a);
    const __m256 fb =
        _mm256_fmadd_ps(_mm256_maskload_ps(w + i + 8, m1), _mm256_maskload_ps(x + i + 8, m1), b);
    a = _mm256_blendv_ps(a, fa, _mm256_castsi256_ps(m0));
    b = _mm256_blendv_ps(b, fb, _mm256_castsi256_ps(m1));
  }
  return fold(a, b);
}

float f16(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }  // exact, as fp16_to_fp32

// 8 bytes widened to 8 lanes.
__m256i bytes8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// A block's 32 elements as v[0..3] = elements [0, 8), [8, 16), [16, 24),
// [24, 32), each as dequantize_row() computes it.
// A code's value: (q - kOffset) * d, or q * d + m for the types with a min
// (kMin).
template <bool kMin, int kOffset>
__m256 code_value(__m256i q, __m256 d, __m256 m) {
  if constexpr (kMin) return _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), d), m);
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q, _mm256_set1_epi32(kOffset))), d);
}

// Q4_0 (18 B): (q - 8) * d; Q4_1 (kMin, 20 B): q * d + m. Element j < 16 the
// low nibble of byte j, j + 16 its high nibble.
template <bool kMin>
struct Q4A {
  static constexpr size_t kBytes = kMin ? 20 : 18;
  static void block(const uint8_t* b, __m256 v[4]) {
    const __m256 d = _mm256_set1_ps(f16(b));
    __m256 m = _mm256_setzero_ps();
    if constexpr (kMin) m = _mm256_set1_ps(f16(b + 2));
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + (kMin ? 4 : 2)));
    const __m256i q0 = _mm256_cvtepu8_epi32(qs), q1 = _mm256_cvtepu8_epi32(_mm_srli_si128(qs, 8));
    const __m256i fifteen = _mm256_set1_epi32(15);
    v[0] = code_value<kMin, 8>(_mm256_and_si256(q0, fifteen), d, m);
    v[1] = code_value<kMin, 8>(_mm256_and_si256(q1, fifteen), d, m);
    v[2] = code_value<kMin, 8>(_mm256_srli_epi32(q0, 4), d, m);
    v[3] = code_value<kMin, 8>(_mm256_srli_epi32(q1, 4), d, m);
  }
};

// The 5-bit codes of a Q5 block: code e of the 32 = nibble (low for e < 16,
// high for e >= 16) | bit e of qh << 4. q0 / q1: bytes 0-7 / 8-15 widened.
void five_bit_codes(__m256i q0, __m256i q1, uint32_t qh, __m256i c[4]) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), one = _mm256_set1_epi32(1),
                fifteen = _mm256_set1_epi32(15), h = _mm256_set1_epi32(static_cast<int>(qh));
  const __m256i nib[4] = {_mm256_and_si256(q0, fifteen), _mm256_and_si256(q1, fifteen),
                          _mm256_srli_epi32(q0, 4), _mm256_srli_epi32(q1, 4)};
  for (int p = 0; p < 4; ++p) {
    const __m256i bit = _mm256_and_si256(
        _mm256_srlv_epi32(h, _mm256_add_epi32(lane, _mm256_set1_epi32(8 * p))), one);
    c[p] = _mm256_or_si256(nib[p], _mm256_slli_epi32(bit, 4));
  }
}

// Q5_0 (22 B): (q - 16) * d; Q5_1 (kMin, 24 B): q * d + m.
template <bool kMin>
struct Q5A {
  static constexpr size_t kBytes = kMin ? 24 : 22;
  static void block(const uint8_t* b, __m256 v[4]) {
    const __m256 d = _mm256_set1_ps(f16(b));
    __m256 m = _mm256_setzero_ps();
    if constexpr (kMin) m = _mm256_set1_ps(f16(b + 2));
    const uint32_t qh = load_u32(b + (kMin ? 4 : 2));
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + (kMin ? 8 : 6)));
    __m256i c[4];
    five_bit_codes(_mm256_cvtepu8_epi32(qs), _mm256_cvtepu8_epi32(_mm_srli_si128(qs, 8)), qh, c);
    for (int p = 0; p < 4; ++p) v[p] = code_value<kMin, 16>(c[p], d, m);
  }
};

// Q8_0 (34 B): q * d, q signed.
struct Q8_0A {
  static constexpr size_t kBytes = 34;
  static void block(const uint8_t* b, __m256 v[4]) {
    const __m256 d = _mm256_set1_ps(f16(b));
    for (int p = 0; p < 4; ++p) {
      const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 2 + 8 * p));
      v[p] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d);
    }
  }
};

// K-quants: unit u is sub-block u % 8 (32 elements) of super-block u / 8,
// decoded as the AVX-512 kernels do (exact_dot_avx512.cpp), 8 elements at a
// time. Q4_K / Q5_K: x = d1 * q - m1, d1 = d * sc, m1 = dmin * m; sub-blocks
// 2c and 2c + 1 share chunk c's bytes (low / high nibbles); Q5_K's fifth bit
// of sub-block k is bit k of qh[l].
template <bool kFive>
struct QK45A {
  static void unit(const uint8_t* row, int64_t u, __m256 v[4]) {
    const uint8_t* b = row + (kFive ? 176 : 144) * (u / 8);
    const int k = static_cast<int>(u % 8), c = k / 2;
    int sc, m;
    k4_scale_min(k, b + 4, &sc, &m);
    const __m256 d1 = _mm256_set1_ps(f16(b) * static_cast<float>(sc));
    const __m256 m1 = _mm256_set1_ps(f16(b + 2) * static_cast<float>(m));
    const uint8_t* q = b + (kFive ? 48 : 16) + 32 * c;
    const __m128i shift = _mm_cvtsi32_si128((k & 1) * 4);
    for (int p = 0; p < 4; ++p) {
      __m256i code =
          _mm256_and_si256(_mm256_srl_epi32(bytes8(q + 8 * p), shift), _mm256_set1_epi32(15));
      if constexpr (kFive) {
        const __m256i bit = _mm256_and_si256(
            _mm256_srl_epi32(bytes8(b + 16 + 8 * p), _mm_cvtsi32_si128(k)), _mm256_set1_epi32(1));
        code = _mm256_or_si256(code, _mm256_slli_epi32(bit, 4));
      }
      v[p] = _mm256_sub_ps(_mm256_mul_ps(d1, _mm256_cvtepi32_ps(code)), m1);
    }
  }
};

// Q6_K (210 B): sub-block k = half k / 4, quarter k % 4 of that half;
// x = (d * scale) * (6-bit q - 32), one int8 scale per 16 elements.
struct Q6KA {
  static void unit(const uint8_t* row, int64_t u, __m256 v[4]) {
    const uint8_t* b = row + 210 * (u / 8);
    const int k = static_cast<int>(u % 8), half = k / 4, quarter = k % 4;
    const uint8_t* ql = b + 64 * half + (quarter & 1) * 32;
    const uint8_t* qh = b + 128 + 32 * half;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192 + 8 * half + 2 * quarter);
    const float d = f16(b + 208);
    const __m128i nib = _mm_cvtsi32_si128((quarter >> 1) * 4), hib = _mm_cvtsi32_si128(2 * quarter);
    for (int p = 0; p < 4; ++p) {
      const __m256i low =
          _mm256_and_si256(_mm256_srl_epi32(bytes8(ql + 8 * p), nib), _mm256_set1_epi32(15));
      const __m256i high =
          _mm256_and_si256(_mm256_srl_epi32(bytes8(qh + 8 * p), hib), _mm256_set1_epi32(3));
      const __m256i q =
          _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), _mm256_set1_epi32(32));
      v[p] =
          _mm256_mul_ps(_mm256_set1_ps(d * static_cast<float>(sc[p / 2])), _mm256_cvtepi32_ps(q));
    }
  }
};

// A legacy type's unit u: its block u.
template <class B>
struct Legacy {
  static void unit(const uint8_t* row, int64_t u, __m256 v[4]) { B::block(row + B::kBytes * u, v); }
};

// NR rows x NT tokens over n (a multiple of 32) elements: element i of a row
// into lane i % 16 by FMA, in increasing i, as the reference.
template <class D, int NR, int NT>
void micro(const uint8_t* w, size_t w_stride, const float* x, int64_t ldx, int64_t n, float* out,
           int64_t ldo) {
  __m256 lo[NR][NT], hi[NR][NT];
  for (int r = 0; r < NR; ++r)
    for (int t = 0; t < NT; ++t) lo[r][t] = hi[r][t] = _mm256_setzero_ps();
  for (int64_t u = 0; u < n / 32; ++u) {
    __m256 v[NR][4];
    for (int r = 0; r < NR; ++r) D::unit(w + r * w_stride, u, v[r]);
    for (int t = 0; t < NT; ++t) {
      const float* xt = x + t * ldx + 32 * u;
      for (int p = 0; p < 4; ++p) {
        const __m256 xp = _mm256_loadu_ps(xt + 8 * p);
        for (int r = 0; r < NR; ++r) {
          __m256& acc = p % 2 == 0 ? lo[r][t] : hi[r][t];
          acc = _mm256_fmadd_ps(v[r][p], xp, acc);
        }
      }
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int t = 0; t < NT; ++t) out[t * ldo + r] = fold(lo[r][t], hi[r][t]);
}

template <class D>
void rows(const uint8_t* w, size_t w_stride, int64_t n_rows, const float* x, int64_t ldx,
          int64_t n_x, int64_t n, float* out, int64_t ldo) {
  if (n_x == 1) {  // decode: two rows at once, four independent FMA chains
    int64_t r = 0;
    for (; r + 2 <= n_rows; r += 2) {
      prefetch_rows_ahead(w, w_stride, n_rows, r, 2);  // weights stream from memory once per token
      micro<D, 2, 1>(w + r * w_stride, w_stride, x, ldx, n, out + r, ldo);
    }
    if (r < n_rows) micro<D, 1, 1>(w + r * w_stride, w_stride, x, ldx, n, out + r, ldo);
    return;
  }
  for (int64_t t = 0; t < n_x; t += 2) {
    for (int64_t r = 0; r < n_rows; ++r) {
      if (n_x - t >= 2)
        micro<D, 1, 2>(w + r * w_stride, w_stride, x + t * ldx, ldx, n, out + t * ldo + r, ldo);
      else
        micro<D, 1, 1>(w + r * w_stride, w_stride, x + t * ldx, ldx, n, out + t * ldo + r, ldo);
    }
  }
}

template <class D>
void decode_row(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t u = 0; u < n / 32; ++u) {
    __m256 v[4];
    D::unit(src, u, v);
    for (int p = 0; p < 4; ++p) _mm256_storeu_ps(dst + 32 * u + 8 * p, v[p]);
  }
}

// Calls f.template operator()<D>() with the decoder of `type`; false when
// this file has none for it.
template <class F>
bool with_decoder(GgmlType type, F&& f) {
  switch (type) {
    case GgmlType::Q4_0:
      return f.template operator()<Legacy<Q4A<false>>>(), true;
    case GgmlType::Q4_1:
      return f.template operator()<Legacy<Q4A<true>>>(), true;
    case GgmlType::Q5_0:
      return f.template operator()<Legacy<Q5A<false>>>(), true;
    case GgmlType::Q5_1:
      return f.template operator()<Legacy<Q5A<true>>>(), true;
    case GgmlType::Q8_0:
      return f.template operator()<Legacy<Q8_0A>>(), true;
    case GgmlType::Q4_K:
      return f.template operator()<QK45A<false>>(), true;
    case GgmlType::Q5_K:
      return f.template operator()<QK45A<true>>(), true;
    case GgmlType::Q6_K:
      return f.template operator()<Q6KA>(), true;
    default:
      return false;
  }
}

void tile(GgmlType type, const uint8_t* w, size_t w_stride, int64_t n_rows, const float* x,
          int64_t ldx, int64_t n_x, int64_t n, float* out, int64_t ldo) {
  if (!with_decoder(type,
                    [&]<class D>() { rows<D>(w, w_stride, n_rows, x, ldx, n_x, n, out, ldo); }))
    tile_by_rows(type, w, w_stride, n_rows, x, ldx, n_x, n, out, ldo, dot);
}

void dequantize(GgmlType type, const uint8_t* src, float* dst, int64_t n) {
  if (!with_decoder(type, [&]<class D>() { decode_row<D>(src, dst, n); }))
    dequantize_row(type, src, dst, n);
}

}  // namespace
}  // namespace kvbench::exact

KVBENCH_TARGET_END()

namespace kvbench::exact {
const Kernels* avx2_kernels() {
  static const Kernels k{dequantize, tile};  // planar rows: converted back (exact_dot.cpp)
  return &k;
}
}  // namespace kvbench::exact

#endif  // x86-64
