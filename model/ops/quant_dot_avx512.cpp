// AVX-512 (F/BW/DQ/VL + VNNI) kernels, chosen at run time like the AVX2 ones.
// Float operations follow the order defined in quant_dot_scalar.cpp exactly.
//
// Legacy blocks go four at a time through 512-bit registers (vpdpbusd: u8 x
// s8, four products per int32 lane), 4 lanes per block: the 16-lane layout of
// the reference. A micro-kernel holds a few weight rows and meets several
// activation rows with them (2 x 6 on planar rows, 4 x 3 on GGUF rows; see
// legacy_tile), so prefill reuses each decoded weight register and decode (1
// activation) streams several rows at once. Planar rows (model/ops/planar.h) go
// through the same float steps with plain loads instead of permutes.
//
// K-quant tiles (Q2_K, Q4_K, Q5_K, Q6_K) are in quant_dot_kquant_avx512.cpp;
// Q3_K keeps the AVX2 kernel.
//
// The activation quantizers are the AVX2 ones (a 32-element block fills one
// 256-bit register; wider registers gain nothing there), and so is the Q8_0
// decode kernel (see q8_0_tile below).
// a * b + c must not be fused behind our back: the order of float operations
// is the contract between the paths. (GCC in ISO mode does not fuse.)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "model/ops/quant_dot_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

// Loops over the rows and activations of a micro-kernel must be fully
// unrolled, or their accumulators live in memory instead of registers.
#if defined(__clang__)
#define KVBENCH_UNROLL _Pragma("unroll")
#else
#define KVBENCH_UNROLL _Pragma("GCC unroll 16")
#endif

#if defined(__clang__)
#pragma clang attribute push(                                                               \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c"))), \
    apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")
#endif

namespace kvbench::qdot {
namespace {

uint32_t u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint16_t u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
__m256i load256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// hsum16 of quant_dot_scalar.cpp.
float hsum16(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// hsum16 of four registers at once, the same tree for each:
// [hsum16(a), hsum16(b), hsum16(c), hsum16(d)].
__m128 hsum16x4(__m512 a, __m512 b, __m512 c, __m512 d) {
  // s8 = v[0:8] + v[8:16]: [a.s8 | b.s8], [c.s8 | d.s8]
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(3, 2, 3, 2)));
  // s4 = s8[0:4] + s8[4:8]: [a.s4, b.s4, c.s4, d.s4]
  const __m512 s4 = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
  // s2 = [s4[0] + s4[2], s4[1] + s4[3]], then s2[0] + s2[1], per 128-bit lane.
  const __m512 s2 = _mm512_add_ps(s4, _mm512_permute_ps(s4, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512 s1 = _mm512_add_ps(s2, _mm512_permute_ps(s2, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_castps512_ps128(_mm512_permutexvar_ps(
      _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), s1));
}

// ---------------------------------------------------------------------------
// Legacy blocks, four consecutive blocks (a quad) per step.
//
// A 4-bit block keeps elements 0-15 in the low nibbles and 16-31 in the high
// nibbles of its 16 bytes. The 16 bytes of four blocks fill one register: AND
// 0x0F gives the four blocks' elements 0-15, a shift the elements 16-31. Two
// vpdpbusd with the matching activation halves leave 4 int32 lanes per block,
// so one convert, one multiply (d_w * d_a) and one FMA serve four blocks: the
// lane layout of quant_dot_scalar.cpp.
//
// Weights are read in the file's layout: two masked loads cover a quad and
// word permutes pull out the bytes and the scales (all block sizes are even).
// Activations are packed once per tile call, as a GEMM packs its B panel:
// per quad the elements 0-15 of the four blocks (64 B), elements 16-31
// (64 B), the 16 scale lanes [d_a(b) x4, ..., d_a(b+3) x4] as f32 (64 B), and
// for weight types with an offset the start value -offset * (sum of each
// lane's eight activations) (64 B); then per block the f32 s of Q8_1.

struct WordIndex {
  int16_t w[32];
};
// 128-bit lane g = the 8 words at q0 + g * step.
constexpr WordIndex lanes_index(int q0, int step) {
  WordIndex x{};
  for (int g = 0; g < 4; ++g)
    for (int k = 0; k < 8; ++k) x.w[8 * g + k] = static_cast<int16_t>(q0 + g * step + k);
  return x;
}
// Words 4g..4g+3 = word d0 + g * step (16 f16 scales -> 16 lanes).
constexpr WordIndex scales_index(int d0, int step) {
  WordIndex x{};
  for (int g = 0; g < 4; ++g)
    for (int k = 0; k < 4; ++k) x.w[4 * g + k] = static_cast<int16_t>(d0 + g * step);
  return x;
}
// Words 0..3 = word m0 + g * step.
constexpr WordIndex pick4_index(int m0, int step) {
  WordIndex x{};
  for (int g = 0; g < 4; ++g) x.w[g] = static_cast<int16_t>(m0 + g * step);
  return x;
}
__m512i index_of(const WordIndex& x) { return _mm512_loadu_si512(x.w); }

// `words` (0..64) words from p in two registers; nothing read past them.
struct Words {
  __m512i lo, hi;
};
Words load_words(const uint8_t* p, int words) {
  const auto mask = [](int n) {
    return static_cast<__mmask32>(n >= 32 ? ~0u : n <= 0 ? 0u : (1u << n) - 1);
  };
  return {_mm512_maskz_loadu_epi16(mask(words), p),
          _mm512_maskz_loadu_epi16(mask(words - 32), p + 64)};
}
__m512i permute_words(const Words& x, const WordIndex& index) {
  return _mm512_permutex2var_epi16(x.lo, index_of(index), x.hi);
}

// What a weight format hands the kernel for a quad of `count` (1..4) blocks;
// missing blocks are zero.
struct QuadCodes {
  __m512i lo, hi;  // unsigned codes of elements 0-15 / 16-31 of the 4 blocks
  __m512 d;        // [d_w(b) x4, ..., d_w(b+3) x4]
  __m128 m;        // [m(b), .., m(b+3)] (min types)
};

// Q4_0 / Q4_1 / Q5_0 / Q5_1: B bytes per block, value = code - kOffset; the
// word offsets of d, m and qs inside a block, and the byte offset of the 5th
// bits (-1: none).
template <size_t B, int kOffsetV, bool kMinV, int kDWord, int kMWord, int kQsWord, int kQhByte>
struct NibbleFormat {
  static constexpr size_t kBytes = B;
  static constexpr int kOffset = kOffsetV;
  static constexpr bool kMin = kMinV;
  static constexpr int kStep = static_cast<int>(B / 2);
  static constexpr WordIndex kQs = lanes_index(kQsWord, kStep);
  static constexpr WordIndex kD = scales_index(kDWord, kStep);
  static constexpr WordIndex kM = pick4_index(kMWord, kStep);
  static QuadCodes decode(const uint8_t* b, int count) {
    const Words x = load_words(b, count * kStep);
    const __m512i q = permute_words(x, kQs);
    QuadCodes c;
    const __m512i nib = _mm512_set1_epi8(0x0F);
    c.lo = _mm512_and_si512(q, nib);
    c.hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
    if constexpr (kQhByte >= 0) {
      // Bit e of a block's qh is the 5th bit of element e: the low 16 bits
      // go with elements 0-15, the high 16 with 16-31.
      uint64_t lo = 0, hi = 0;
      for (int g = 0; g < count; ++g) {
        const uint32_t qh = u32(b + g * B + kQhByte);
        lo |= static_cast<uint64_t>(qh & 0xFFFF) << (16 * g);
        hi |= static_cast<uint64_t>(qh >> 16) << (16 * g);
      }
      const __m512i sixteen = _mm512_set1_epi8(16);
      c.lo = _mm512_mask_add_epi8(c.lo, lo, c.lo, sixteen);
      c.hi = _mm512_mask_add_epi8(c.hi, hi, c.hi, sixteen);
    }
    c.d = _mm512_cvtph_ps(_mm512_castsi512_si256(permute_words(x, kD)));
    if constexpr (kMin) c.m = _mm_cvtph_ps(_mm512_castsi512_si128(permute_words(x, kM)));
    return c;
  }
};
//                          bytes offset min    d  m  qs  qh
using Q4_0W = NibbleFormat<18, 8, false, 0, 0, 1, -1>;
using Q4_1W = NibbleFormat<20, 0, true, 0, 1, 2, -1>;
using Q5_0W = NibbleFormat<22, 16, false, 0, 0, 3, 2>;
using Q5_1W = NibbleFormat<24, 0, true, 0, 1, 4, 4>;

// The 128-bit halves of four 32-byte rows -> [r0.lo, r1.lo, r2.lo, r3.lo]
// and [r0.hi, ..., r3.hi].
void split_halves(__m256i r0, __m256i r1, __m256i r2, __m256i r3, __m512i& lo, __m512i& hi) {
  const __m512i a =
      _mm512_inserti64x4(_mm512_castsi256_si512(r0), r1, 1);  // r0.lo r0.hi r1.lo r1.hi
  const __m512i b = _mm512_inserti64x4(_mm512_castsi256_si512(r2), r3, 1);
  lo = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  hi = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 1, 3, 1));
}

// Q8_0 (34 B: d, qs[32]): signed bytes made unsigned by flipping the top bit
// (code = q + 128).
struct Q8_0W {
  static constexpr size_t kBytes = 34;
  static constexpr int kOffset = 128;
  static constexpr bool kMin = false;
  static constexpr WordIndex kD = scales_index(0, 17);
  static QuadCodes decode(const uint8_t* b, int count) {
    __m256i q[4];
    for (int g = 0; g < 4; ++g)
      q[g] = g < count ? load256(b + g * kBytes + 2) : _mm256_setzero_si256();
    QuadCodes c;
    split_halves(q[0], q[1], q[2], q[3], c.lo, c.hi);
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    c.lo = _mm512_xor_si512(c.lo, flip);
    c.hi = _mm512_xor_si512(c.hi, flip);
    // Only the d words: 17 * (count - 1) + 1.
    c.d = _mm512_cvtph_ps(
        _mm512_castsi512_si256(permute_words(load_words(b, 17 * (count - 1) + 1), kD)));
    return c;
  }
};

// Packed activations of one row: per quad kQuadBytes, then per block the
// f32 s (min types), zero-padded to a multiple of 16 blocks.
template <class W>
struct Packed {
  static constexpr size_t kQuadBytes = W::kOffset > 0 ? 256 : 192;
  static size_t row_bytes(int64_t nb) {
    const size_t quads = static_cast<size_t>((nb + 3) / 4);
    const size_t s = W::kMin ? static_cast<size_t>((nb + 15) / 16 * 16) * sizeof(float) : 0;
    return quads * kQuadBytes + s;
  }
  static const float* s(const uint8_t* row, int64_t nb) {
    return reinterpret_cast<const float*>(row + static_cast<size_t>((nb + 3) / 4) * kQuadBytes);
  }
};

float f16_at(const uint8_t* p) { return _cvtsh_ss(u16(p)); }

template <class W>
void pack_activations(const uint8_t* a, int64_t nb, uint8_t* out) {
  constexpr size_t kAB = W::kMin ? kQ8_1Bytes : kQ8_0Bytes;
  constexpr size_t kAQs = W::kMin ? 4 : 2;
  for (int64_t b = 0; b < nb; b += 4) {
    const int count = static_cast<int>(std::min<int64_t>(4, nb - b));
    __m256i q[4];
    float d[4];
    for (int g = 0; g < 4; ++g) {
      q[g] = g < count ? load256(a + (b + g) * kAB + kAQs) : _mm256_setzero_si256();
      d[g] = g < count ? f16_at(a + (b + g) * kAB) : 0.0f;
    }
    __m512i lo, hi;
    split_halves(q[0], q[1], q[2], q[3], lo, hi);
    _mm512_store_si512(out, lo);
    _mm512_store_si512(out + 64, hi);
    _mm512_store_ps(out + 128, _mm512_setr_ps(d[0], d[0], d[0], d[0], d[1], d[1], d[1], d[1], d[2],
                                              d[2], d[2], d[2], d[3], d[3], d[3], d[3]));
    if constexpr (W::kOffset > 0) {
      const __m512i off = _mm512_set1_epi8(static_cast<char>(W::kOffset));
      const __m512i sum =
          _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), off, lo), off, hi);
      _mm512_store_si512(out + 192, _mm512_sub_epi32(_mm512_setzero_si512(), sum));
    }
    out += Packed<W>::kQuadBytes;
  }
  if constexpr (W::kMin) {
    auto* s = reinterpret_cast<float*>(out);
    const int64_t padded = (nb + 15) / 16 * 16;
    for (int64_t b = 0; b < padded; ++b) s[b] = b < nb ? f16_at(a + b * kAB + 2) : 0.0f;
  }
}

// The steps every legacy micro-kernel shares (GGUF or planar rows), always
// inlined so that the accumulators stay in registers.
#define KVBENCH_INLINE __attribute__((always_inline)) inline

// acc[r][t] += quad of weight row r . quad of activation t: two vpdpbusd into
// the activation's offset start value, then d_w * d_a times the integer sums
// (the float steps of quant_dot_scalar.cpp). pq: the quad in the first packed
// activation row.
template <class W, int R, int T>
KVBENCH_INLINE void quad_fma(const QuadCodes (&wc)[R], const uint8_t* pq, size_t packed_stride,
                             __m512 (&acc)[R][T]) {
  KVBENCH_UNROLL
  for (int t = 0; t < T; ++t) {
    const uint8_t* pa = pq + t * packed_stride;
    const __m512i alo = _mm512_load_si512(pa);
    const __m512i ahi = _mm512_load_si512(pa + 64);
    const __m512 da = _mm512_load_ps(pa + 128);
    const __m512i base = W::kOffset > 0 ? _mm512_load_si512(pa + 192) : _mm512_setzero_si512();
    KVBENCH_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m512i isum =
          _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(base, wc[r].lo, alo), wc[r].hi, ahi);
      acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(wc[r].d, da), _mm512_cvtepi32_ps(isum), acc[r][t]);
    }
  }
}

// out[t * ldo + r] = hsum16(acc[r][t] (+ macc[r][t] for min types)), the
// R * T accumulators reduced four at a time.
template <class W, int R, int T>
KVBENCH_INLINE void store_tile(__m512 (&acc)[R][T],
                               const float (&macc)[W::kMin ? R : 1][W::kMin ? T : 1][16],
                               float* out, int64_t ldo) {
  constexpr int kN = R * T;
  __m512 all[(kN + 3) / 4 * 4];
  KVBENCH_UNROLL
  for (int r = 0; r < R; ++r) {
    KVBENCH_UNROLL
    for (int t = 0; t < T; ++t) {
      if constexpr (W::kMin) acc[r][t] = _mm512_add_ps(acc[r][t], _mm512_load_ps(macc[r][t]));
      all[r * T + t] = acc[r][t];
    }
  }
  KVBENCH_UNROLL
  for (int i = kN; i < (kN + 3) / 4 * 4; ++i) all[i] = _mm512_setzero_ps();
  KVBENCH_UNROLL
  for (int i = 0; i < kN; i += 4) {
    alignas(16) float v[4];
    _mm_store_ps(v, hsum16x4(all[i], all[i + 1], all[i + 2], all[i + 3]));
    KVBENCH_UNROLL
    for (int k = 0; k < 4 && i + k < kN; ++k) out[((i + k) % T) * ldo + (i + k) / T] = v[k];
  }
}

// R weight rows x T packed activation rows over all blocks.
template <class W, int R, int T>
void legacy_micro(const uint8_t* w, size_t w_stride, const uint8_t* packed, size_t packed_stride,
                  int64_t nb, float* out, int64_t ldo) {
  using P = Packed<W>;
  __m512 acc[R][T];
  KVBENCH_UNROLL
  for (int r = 0; r < R; ++r) KVBENCH_UNROLL
  for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  // The min term sum_b m_b * s_b: lanes b % 16, one FMA per chunk of 16.
  alignas(64) float mrow[R][16];
  alignas(64) float macc[W::kMin ? R : 1][W::kMin ? T : 1][16] = {};
  for (int64_t c0 = 0; c0 < nb; c0 += 16) {
    const int cnt = static_cast<int>(std::min<int64_t>(16, nb - c0));
    if (W::kMin && cnt < 16) std::memset(mrow, 0, sizeof(mrow));
    for (int i = 0; i < cnt; i += 4) {
      const int64_t b = c0 + i;
      const int count = std::min(4, cnt - i);
      QuadCodes wc[R];
      KVBENCH_UNROLL
      for (int r = 0; r < R; ++r) {
        const uint8_t* wb = w + r * w_stride + b * W::kBytes;
        // Decode streams the weights from memory once: ask for the same quad
        // of the row R rows ahead (the next micro-kernel's) so that enough
        // cache misses are in flight.
        if (T == 1) {
          KVBENCH_UNROLL
          for (size_t off = 0; off < 4 * W::kBytes; off += 64)
            _mm_prefetch(reinterpret_cast<const char*>(wb + R * w_stride + off), _MM_HINT_T0);
        }
        wc[r] = W::decode(wb, count);
        if constexpr (W::kMin) _mm_store_ps(mrow[r] + i, wc[r].m);
      }
      quad_fma<W>(wc, packed + static_cast<size_t>(b / 4) * P::kQuadBytes, packed_stride, acc);
    }
    if constexpr (W::kMin) {
      KVBENCH_UNROLL
      for (int t = 0; t < T; ++t) {
        const __m512 sa = _mm512_loadu_ps(P::s(packed + t * packed_stride, nb) + c0);
        KVBENCH_UNROLL
        for (int r = 0; r < R; ++r)
          _mm512_store_ps(macc[r][t],
                          _mm512_fmadd_ps(_mm512_load_ps(mrow[r]), sa, _mm512_load_ps(macc[r][t])));
      }
    }
  }
  store_tile<W>(acc, macc, out, ldo);
}

// Per thread, reused: the packed activations of the current tile call.
struct alignas(64) Line {
  uint8_t bytes[64];
};
std::vector<Line>& pack_buffer() {
  thread_local std::vector<Line> buffer;
  return buffer;
}

// ---------------------------------------------------------------------------
// Planar rows (model/ops/planar.h): the float steps of legacy_micro, only the
// loads differ. Four blocks' codes are one load (no permute), sixteen blocks'
// scales one 32-byte load and one conversion per chunk, and a quad's 16 scale
// lanes one permute of those; the mins go straight into the chunk's FMA.

__mmask64 bytes_mask(int bytes) { return bytes >= 64 ? ~0ull : (1ull << bytes) - 1; }

// What a planar format hands planar_micro: codes(row, nb, b, count, lo, hi)
// gives the unsigned codes of elements 0-15 / 16-31 of the quad of `count`
// blocks at block b; kQs is the bytes per block of the codes plane (what a
// quad's prefetch covers) and kPlanes the bytes per block before the d plane.

// Q4_0 / Q4_1: 16 code bytes per block, four blocks per 64-byte load.
struct PlanarNibbles {
  static constexpr size_t kQs = 16;
  static constexpr size_t kPlanes = 16;
  static void codes(const uint8_t* row, int64_t nb, int64_t b, int count, __m512i& lo,
                    __m512i& hi) {
    const uint8_t* q4 = row + b * kQs;
    const __m512i q =
        count == 4 ? _mm512_loadu_si512(q4) : _mm512_maskz_loadu_epi8(bytes_mask(16 * count), q4);
    const __m512i nib = _mm512_set1_epi8(0x0F);
    lo = _mm512_and_si512(q, nib);
    hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
  }
};
// Q5_0 / Q5_1: the nibbles as Q4, plus a quad's four 32-bit qh words in one
// 16-byte load from the qh plane. Bit e of a block's qh is the 5th bit of
// element e (+16 on the code): the low halves of the four words are the mask
// of the lo register's 64 bytes, the high halves that of hi (see
// NibbleFormat::decode, which builds the same masks from the GGUF blocks).
struct PlanarNibbles5 {
  static constexpr size_t kQs = 16;
  static constexpr size_t kPlanes = 20;
  static void codes(const uint8_t* row, int64_t nb, int64_t b, int count, __m512i& lo,
                    __m512i& hi) {
    PlanarNibbles::codes(row, nb, b, count, lo, hi);
    const uint8_t* qh4 = row + static_cast<size_t>(nb) * kQs + static_cast<size_t>(b) * 4;
    const __m128i qh = _mm_maskz_loadu_epi32(static_cast<__mmask8>((1u << count) - 1), qh4);
    const auto lo_bits = static_cast<__mmask64>(_mm_cvtsi128_si64(_mm_cvtepi32_epi16(qh)));
    const auto hi_bits =
        static_cast<__mmask64>(_mm_cvtsi128_si64(_mm_cvtepi32_epi16(_mm_srli_epi32(qh, 16))));
    const __m512i sixteen = _mm512_set1_epi8(16);
    lo = _mm512_mask_add_epi8(lo, lo_bits, lo, sixteen);
    hi = _mm512_mask_add_epi8(hi, hi_bits, hi, sixteen);
  }
};
// Q8_0: a quad is [elements 0-15 of its blocks][elements 16-31], already
// unsigned (q + 128).
struct PlanarBytes {
  static constexpr size_t kQs = 32;
  static constexpr size_t kPlanes = 32;
  static void codes(const uint8_t* row, int64_t nb, int64_t b, int count, __m512i& lo,
                    __m512i& hi) {
    const uint8_t* q8 = row + b * kQs;
    if (count == 4) {
      lo = _mm512_loadu_si512(q8);
      hi = _mm512_loadu_si512(q8 + 64);
      return;
    }
    const __mmask64 m = bytes_mask(16 * count);
    lo = _mm512_maskz_loadu_epi8(m, q8);
    hi = _mm512_maskz_loadu_epi8(m, q8 + 16 * count);
  }
};

// How far ahead planar decode (one activation row) prefetches weights, in
// rows, and into L2: a thread needs more misses in flight than L1 tracks to
// stream from memory. Measured on the output matrix (49152 x 576 Q8_0, 30 MB,
// 2 threads, Zen 4): 4 rows into L1 24 GB/s, 12 rows into L2 51 GB/s, 16 rows
// 56 GB/s, 24-32 rows no better.
constexpr int kPrefetchRows = 16;

// Lanes 4g..4g+3 = g: the scale lanes of a quad, offset by its first block.
__m512i quad_lanes(int first) {
  return _mm512_add_epi32(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                          _mm512_set1_epi32(first));
}

// R planar weight rows x T packed activation rows over all blocks; the
// output bits of legacy_micro<W, R, T> on the GGUF rows.
template <class W, class PW, int R, int T>
void planar_micro(const uint8_t* w, size_t w_stride, const uint8_t* packed, size_t packed_stride,
                  int64_t nb, float* out, int64_t ldo) {
  using P = Packed<W>;
  const size_t d_plane = static_cast<size_t>(nb) * PW::kPlanes;
  const size_t m_plane = d_plane + static_cast<size_t>(nb) * 2;
  __m512 acc[R][T];
  KVBENCH_UNROLL
  for (int r = 0; r < R; ++r) KVBENCH_UNROLL
  for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  alignas(64) float macc[W::kMin ? R : 1][W::kMin ? T : 1][16] = {};
  for (int64_t c0 = 0; c0 < nb; c0 += 16) {
    const int cnt = static_cast<int>(std::min<int64_t>(16, nb - c0));
    const auto scale_mask = static_cast<__mmask16>(cnt == 16 ? 0xFFFFu : (1u << cnt) - 1);
    __m512 d16[R];
    KVBENCH_UNROLL
    for (int r = 0; r < R; ++r) {
      const uint8_t* ds = w + r * w_stride + d_plane + 2 * c0;
      d16[r] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(scale_mask, ds));
      if (T == 1) {  // see kPrefetchRows
        _mm_prefetch(reinterpret_cast<const char*>(ds + kPrefetchRows * w_stride), _MM_HINT_T1);
        if constexpr (PW::kPlanes > PW::kQs)  // the chunk's 64 bytes of qh
          _mm_prefetch(reinterpret_cast<const char*>(w + (r + kPrefetchRows) * w_stride +
                                                     nb * PW::kQs + 4 * c0),
                       _MM_HINT_T1);
        if constexpr (W::kMin)
          _mm_prefetch(reinterpret_cast<const char*>(ds + kPrefetchRows * w_stride + 2 * nb),
                       _MM_HINT_T1);
      }
    }
    for (int i = 0; i < cnt; i += 4) {
      const int64_t b = c0 + i;
      const int count = std::min(4, cnt - i);
      const __m512i lanes = quad_lanes(i);
      QuadCodes wc[R];  // m unused: the mins come from the m plane per chunk
      KVBENCH_UNROLL
      for (int r = 0; r < R; ++r) {
        const uint8_t* wb = w + r * w_stride + b * PW::kQs;
        if (T == 1) {
          KVBENCH_UNROLL
          for (size_t off = 0; off < 4 * PW::kQs; off += 64)
            _mm_prefetch(reinterpret_cast<const char*>(wb + kPrefetchRows * w_stride + off),
                         _MM_HINT_T1);
        }
        PW::codes(w + r * w_stride, nb, b, count, wc[r].lo, wc[r].hi);
        wc[r].d = _mm512_permutexvar_ps(lanes, d16[r]);
      }
      quad_fma<W>(wc, packed + static_cast<size_t>(b / 4) * P::kQuadBytes, packed_stride, acc);
    }
    if constexpr (W::kMin) {
      KVBENCH_UNROLL
      for (int r = 0; r < R; ++r) {
        const __m512 m16 = _mm512_cvtph_ps(
            _mm256_maskz_loadu_epi16(scale_mask, w + r * w_stride + m_plane + 2 * c0));
        KVBENCH_UNROLL
        for (int t = 0; t < T; ++t) {
          const __m512 sa = _mm512_loadu_ps(P::s(packed + t * packed_stride, nb) + c0);
          _mm512_store_ps(macc[r][t], _mm512_fmadd_ps(m16, sa, _mm512_load_ps(macc[r][t])));
        }
      }
    }
  }
  store_tile<W>(acc, macc, out, ldo);
}

// PW = void: GGUF rows (legacy_micro); otherwise planar rows read by PW.
template <class W, class PW, int R, int T>
void micro(const uint8_t* w, size_t w_stride, const uint8_t* pt, size_t prow, int64_t nb, float* o,
           int64_t ldo) {
  if constexpr (std::is_void_v<PW>) {
    legacy_micro<W, R, T>(w, w_stride, pt, prow, nb, o, ldo);
  } else {
    planar_micro<W, PW, R, T>(w, w_stride, pt, prow, nb, o, ldo);
  }
}

template <class W, class PW, int R>
void legacy_rows(const uint8_t* w, size_t w_stride, const uint8_t* pt, size_t prow, int64_t nt,
                 int64_t nb, float* o, int64_t ldo) {
  switch (nt) {
    case 1:
      micro<W, PW, R, 1>(w, w_stride, pt, prow, nb, o, ldo);
      break;
    case 2:
      micro<W, PW, R, 2>(w, w_stride, pt, prow, nb, o, ldo);
      break;
    case 3:
      micro<W, PW, R, 3>(w, w_stride, pt, prow, nb, o, ldo);
      break;
    case 4:
      micro<W, PW, R, 4>(w, w_stride, pt, prow, nb, o, ldo);
      break;
    case 5:
      micro<W, PW, R, 5>(w, w_stride, pt, prow, nb, o, ldo);
      break;
    case 6:
      micro<W, PW, R, 6>(w, w_stride, pt, prow, nb, o, ldo);
      break;
    case 7:
      micro<W, PW, R, 7>(w, w_stride, pt, prow, nb, o, ldo);
      break;
    default:
      micro<W, PW, R, 8>(w, w_stride, pt, prow, nb, o, ldo);
      break;
  }
}

// Activations in groups of up to kT (outer: their packed rows stay in L1),
// weight rows in groups of up to kR (inner, streamed). Every output goes
// through the same float steps whatever the group sizes. PW: see micro.
// Planar rows use 2 x 6: on the Intel Xeon machine (2026-11-25) it prefilled
// SmolLM2 (Q4_1) 1.19x, Llama-3.2-1B-shaped Q4_0 1.18x and Q8_0 1.25x faster
// than 4 x 3 (4 x 4, 4 x 6, 3 x 5, 3 x 6, 2 x 7, 2 x 8 and 1 x 6 were slower
// than 2 x 6; decode unchanged): fewer passes over the weights per token
// group, and the accumulators and codes fit the registers. GGUF rows keep
// 4 x 3 (measured on Zen 4: 4 x 4 spilled; 2 x 6, 3 x 4, 3 x 5 the same there).
template <class W, class PW, int kR, int kT>
void legacy_tile(const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* act,
                 size_t act_stride, int64_t n_act, int64_t n, float* out, int64_t ldo) {
  static_assert(kR >= 1 && kR <= 4 && kT >= 1 && kT <= 8);
  const int64_t nb = n / kQK;
  if (nb == 0 || n_rows == 0 || n_act == 0) return;
  const size_t prow = Packed<W>::row_bytes(nb);
  auto& buffer = pack_buffer();
  const size_t need = (prow * n_act + 63) / 64;
  if (buffer.size() < need) buffer.resize(need);
  auto* packed = reinterpret_cast<uint8_t*>(buffer.data());
  for (int64_t t = 0; t < n_act; ++t)
    pack_activations<W>(act + t * act_stride, nb, packed + t * prow);
  for (int64_t t = 0; t < n_act; t += kT) {
    const int64_t nt = std::min<int64_t>(kT, n_act - t);
    const uint8_t* pt = packed + t * prow;
    int64_t r = 0;
    for (; r + kR <= n_rows; r += kR)
      legacy_rows<W, PW, kR>(w + r * w_stride, w_stride, pt, prow, nt, nb, out + t * ldo + r, ldo);
    for (; r < n_rows; ++r)
      legacy_rows<W, PW, 1>(w + r * w_stride, w_stride, pt, prow, nt, nb, out + t * ldo + r, ldo);
  }
}

// ---------------------------------------------------------------------------
// F32 / F16 / BF16 weights, f32 activations: the 16 reference lanes are one
// register; the tail is masked so untouched lanes keep their value.

__m512 load16_f32(const uint8_t* p) { return _mm512_loadu_ps(p); }
__m512 load16_f16(const uint8_t* p) { return _mm512_cvtph_ps(load256(p)); }
__m512 load16_bf16(const uint8_t* p) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load256(p)), 16));
}
__m512 mload16_f32(const uint8_t* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
__m512 mload16_f16(const uint8_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
__m512 mload16_bf16(const uint8_t* p, __mmask16 m) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

template <__m512 (*Load)(const uint8_t*), __m512 (*MLoad)(const uint8_t*, __mmask16), size_t kSize>
float plain_dot(const uint8_t* w, const uint8_t* a, int64_t n) {
  const auto* x = reinterpret_cast<const float*>(a);
  __m512 acc = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    acc = _mm512_fmadd_ps(Load(w + k * kSize), _mm512_loadu_ps(x + k), acc);
  if (k < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - k)) - 1);
    acc = _mm512_mask3_fmadd_ps(MLoad(w + k * kSize, m), _mm512_maskz_loadu_ps(m, x + k), acc, m);
  }
  return hsum16(acc);
}

using DotFn = float (*)(const uint8_t*, const uint8_t*, int64_t);

template <DotFn Dot>
void row_tile(const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* act,
              size_t act_stride, int64_t n_act, int64_t n, float* out, int64_t ldo) {
  for (int64_t t = 0; t < n_act; ++t)
    for (int64_t r = 0; r < n_rows; ++r)
      out[t * ldo + r] = Dot(w + r * w_stride, act + t * act_stride, n);
}

}  // namespace
}  // namespace kvbench::qdot

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

namespace kvbench::qdot {
namespace {

// Q8_0 weights with one or two activation rows (decode) stream from memory
// at 7.8 GB/s through the AVX2 kernel but only 4.7 GB/s through the quad
// kernel on the machine this was tuned on (AMD EPYC, Zen 4; measured with
// 200k x 576 rows, one thread); with more activation rows the quad kernel is
// faster. Both compute the same bits, so the choice is free.
TileFn g_q8_0_quad = nullptr;
void q8_0_tile(const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* act,
               size_t act_stride, int64_t n_act, int64_t n, float* out, int64_t ldo) {
  const TileFn f = n_act <= 2 ? avx2_kernels()->tile[kQ8_0] : g_q8_0_quad;
  f(w, w_stride, n_rows, act, act_stride, n_act, n, out, ldo);
}

}  // namespace

// Built from function addresses only (no AVX-512 code runs here).
const Kernels* avx512_kernels() {
  static const Kernels k = [] {
    Kernels t = *avx2_kernels();  // the quantizers
    t.tile[kQ4_0] = legacy_tile<Q4_0W, void, 4, 3>;
    t.tile[kQ4_1] = legacy_tile<Q4_1W, void, 4, 3>;
    t.tile[kQ5_0] = legacy_tile<Q5_0W, void, 4, 3>;
    t.tile[kQ5_1] = legacy_tile<Q5_1W, void, 4, 3>;
    g_q8_0_quad = legacy_tile<Q8_0W, void, 4, 3>;
    t.planar_tile[kQ4_0] = legacy_tile<Q4_0W, PlanarNibbles, 2, 6>;
    t.planar_tile[kQ4_1] = legacy_tile<Q4_1W, PlanarNibbles, 2, 6>;
    // 5-bit rows decode more per quad (the qh masks): 2 x 8 amortizes that
    // over more activations. Gemma 3 pp512 (AMD EPYC, 2 threads, three
    // alternating rounds): 2 x 8 1118-1121 t/s, 3 x 6 1091-1111, 2 x 7
    // 1075-1110, 2 x 6 1044-1085, 4 x 3 972-1001, 3 x 5 947-1065.
    t.planar_tile[kQ5_0] = legacy_tile<Q5_0W, PlanarNibbles5, 2, 8>;
    t.planar_tile[kQ5_1] = legacy_tile<Q5_1W, PlanarNibbles5, 2, 8>;
    t.planar_tile[kQ8_0] = legacy_tile<Q8_0W, PlanarBytes, 2, 6>;
    t.tile[kQ8_0] = q8_0_tile;
    t.tile[kQ2_K] = kquant_avx512_tile(kQ2_K);
    // Q3_K keeps the AVX2 kernel (t copied it): measured 4.2 vs 2.7 GB/s.
    t.tile[kQ4_K] = kquant_avx512_tile(kQ4_K);
    t.tile[kQ5_K] = kquant_avx512_tile(kQ5_K);
    t.tile[kQ6_K] = kquant_avx512_tile(kQ6_K);
    t.tile[kF32] = row_tile<plain_dot<load16_f32, mload16_f32, 4>>;
    t.tile[kF16] = row_tile<plain_dot<load16_f16, mload16_f16, 2>>;
    t.tile[kBF16] = row_tile<plain_dot<load16_bf16, mload16_bf16, 2>>;
    return t;
  }();
  return &k;
}

}  // namespace kvbench::qdot

#else  // not x86-64

namespace kvbench::qdot {
const Kernels* avx512_kernels() { return nullptr; }
}  // namespace kvbench::qdot

#endif
