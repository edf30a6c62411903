// AVX-512 (F/BW/DQ/VL + VNNI) tile kernels for the K-quant weight types Q2_K,
// Q4_K, Q5_K and Q6_K with Q8_K activations. Float operations follow the order
// of quant_dot_scalar.cpp exactly: per super-block and (row, activation) pair
//   acc = fma(d_w * d_a, float(isum), acc), macc = fma(dmin_w * d_a, float(msum), macc)
// and acc - macc at the end; isum and msum are exact int32 sums, computed here
// in a different order.
//
// Why the shape. A super-block's isum is sum_j scale_j * D_j over its 16
// sub-blocks of 16 elements (D_j: sub-block j's integer dot product; Q4_K /
// Q5_K repeat each 32-element scale twice). The kernels hold a super-block in
// "sub-block lanes": chunk c (0..3) of a row is one register whose dword lane j
// (0..15) holds elements 16j + 4c .. 16j + 4c + 3. Four vpdpbusd (u8 codes x s8
// activations, four products per lane) into one register leave D_j in lane j,
// one vpmulld by the lane scales makes the lanes sum to isum. Activations are
// packed into those lanes once per tile call (a dword transpose); each weight
// format is decoded straight into them (one dword permute per chunk, see the
// formats below), once per super-block and group of kR rows, and met with kT
// activation rows (a register micro-kernel, as the interleaved kernels of the
// legacy types, quant_dot_interleaved_avx512.cpp). The kR x kT lane vectors are then reduced four
// rows at a time (reduce_rows), and the float steps of four pairs are one lane-wise FMA on [acc of
// rows 0-3 | macc of rows 0-3].
//
// Why the integer sums are exact for any input: vpdpbusd and vpmaddwd add
// into int32 without saturation (no vpmaddubsw, whose int16 sums saturate);
// the lane values are bounded by |D_j| <= 16 * 63 * 128 (codes up to 63,
// activations -128..127) and, with the Q6_K offset folded in, |D_j - 32 *
// sum(a)| <= 16 * 32 * 128, times |scale| <= 128, summed over 16 lanes: < 2^31.
// a * b + c must not be fused behind our back: the order of float operations
// is the contract between the paths.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "model/ops/quant_dot_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "model/ops/bytes.h"
#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")

#include "model/ops/simd_avx512.h"

namespace kvbench::qdot {
namespace {

// Micro-kernel shape: kR weight rows x up to kT activation rows. kR = 4 makes
// the four rows of one activation an xmm of results (one reduction, one FMA,
// one store). kT = 6 keeps the 4 x 6 = 24 int32 accumulators, the chunk being
// decoded and its temporaries (about 5) within the 32 zmm registers.
constexpr int kR = 4;
constexpr int kT = 6;

// How far ahead decode (one activation row) prefetches weight rows, into L2:
// the distance the earlier planar-row kernels measured (16 rows into L2).
constexpr int kPrefetchRows = 16;

// 16 dword lanes, lane j = f(j): the permute indices and shift counts below.
struct Lanes {
  int32_t v[16];
};
template <class F>
constexpr Lanes lanes(F f) {
  Lanes x{};
  for (int j = 0; j < 16; ++j) x.v[j] = f(j);
  return x;
}
// The permute index of each chunk c: lane j = f(j) + c. Stored per chunk (not
// added at run time) so that each is a constant the compiler can reload
// instead of keeping it in a register.
struct ChunkLanes {
  Lanes c[4];
};
template <class F>
constexpr ChunkLanes chunk_lanes(F f) {
  ChunkLanes x{};
  for (int c = 0; c < 4; ++c) x.c[c] = lanes([&](int j) { return f(j) + c; });
  return x;
}
KVBENCH_INLINE __m512i lanes_of(const Lanes& x) { return _mm512_loadu_si512(x.v); }
KVBENCH_INLINE __m512i lanes_of(const ChunkLanes& x, int c) { return lanes_of(x.c[c]); }

// (a & c) | b, bitwise: vpternlogd's truth table for a = 0xF0, b = 0xCC, c = 0xAA.
constexpr int kAandCorB = 0xEC;

// ---------------------------------------------------------------------------
// Weight formats. Each gives, for one super-block b of a row:
//   codes(b, c)   chunk c in sub-block lanes, unsigned codes (value = code - kOffset)
//   scales(b)     int32 lane j = the scale of sub-block j
//   mins(b)       int16 lane j = the min of sub-block j (kMin types)
//   kD, kDmin     byte offsets of the f16 super-block scale and min scale.

// Q4_K / Q5_K 6-bit scales and mins (12 bytes at b + 4; see scale_min_k4 in
// quant_dot_scalar.cpp) -> bytes 0-7 scales, 8-15 mins. The same bit moves
// as ggml's utmp shuffle, two 32-bit words at once.
KVBENCH_INLINE __m128i unpack_scale_min_k4(const uint8_t* b) {
  const __m128i q = load128(b + 4);  // words u0 u1 u2 (and 4 bytes of what follows)
  const __m128i k1 = _mm_set1_epi8(0x3F), k2 = _mm_set1_epi8(0x0F), k3 = _mm_set1_epi8(0x03);
  // words [sc0-3, m0-3] = u0 & k1, u1 & k1
  const __m128i first = _mm_and_si128(q, k1);
  // words [sc4-7, m4-7] = (u2 >> 0|4) & k2 | ((u0|u1 >> 6) & k3) << 4
  const __m128i u2 =
      _mm_srlv_epi32(_mm_shuffle_epi32(q, _MM_SHUFFLE(2, 2, 2, 2)), _mm_setr_epi32(0, 4, 0, 0));
  const __m128i second = _mm_or_si128(_mm_and_si128(u2, k2),
                                      _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(q, 6), k3), 4));
  return _mm_unpacklo_epi32(first, second);
}

// Q4_K (144 B): d, dmin, scales[12], qs[128]; byte 32m + l holds element
// 64m + l (low nibble) and 64m + 32 + l (high nibble). Lane j of chunk c
// (elements 16j + 4c..) is qs dword 8(j/4) + 4(j%2) + c, high nibbles where
// bit 1 of j is set.
struct Q4KW {
  static constexpr size_t kBytes = 144;
  static constexpr size_t kD = 0, kDmin = 2;
  static constexpr bool kMin = true;
  static constexpr int kOffset = 0;
  static constexpr ChunkLanes kQs = chunk_lanes([](int j) { return 8 * (j / 4) + 4 * (j % 2); });
  static constexpr Lanes kNibble = lanes([](int j) { return 4 * ((j >> 1) & 1); });
  KVBENCH_INLINE static __m512i nibbles(const uint8_t* qs, int c) {
    const __m512i x = _mm512_permutex2var_epi32(load512(qs), lanes_of(kQs, c), load512(qs + 64));
    return _mm512_srlv_epi32(x, lanes_of(kNibble));
  }
  KVBENCH_INLINE static __m512i codes(const uint8_t* b, int c) {
    return _mm512_and_si512(nibbles(b + 16, c), _mm512_set1_epi8(0x0F));
  }
  KVBENCH_INLINE static __m512i scales(const uint8_t* b) {
    const __m128i s = unpack_scale_min_k4(b);
    return _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(s, s));
  }
  KVBENCH_INLINE static __m256i mins(const uint8_t* b) {
    const __m128i s = unpack_scale_min_k4(b);
    return _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(s, s));
  }
};

// Q5_K (176 B): d, dmin, scales[12], qh[32], qs[128] (as Q4_K). The 5th bit
// of element 64m + l is bit 2m of qh[l], of 64m + 32 + l bit 2m + 1: for lane
// j of chunk c, bit j/2 of qh dword 4(j%2) + c, rotated to bit 4.
struct Q5KW {
  static constexpr size_t kBytes = 176;
  static constexpr size_t kD = 0, kDmin = 2;
  static constexpr bool kMin = true;
  static constexpr int kOffset = 0;
  static constexpr ChunkLanes kQh = chunk_lanes([](int j) { return 4 * (j % 2); });
  static constexpr Lanes kRotate = lanes([](int j) { return (4 - j / 2) & 31; });
  KVBENCH_INLINE static __m512i codes(const uint8_t* b, int c) {
    const __m512i qh =
        _mm512_permutexvar_epi32(lanes_of(kQh, c), _mm512_zextsi256_si512(load256(b + 16)));
    const __m512i high =
        _mm512_and_si512(_mm512_rolv_epi32(qh, lanes_of(kRotate)), _mm512_set1_epi8(0x10));
    return _mm512_ternarylogic_epi32(Q4KW::nibbles(b + 48, c), high, _mm512_set1_epi8(0x0F),
                                     kAandCorB);
  }
  KVBENCH_INLINE static __m512i scales(const uint8_t* b) { return Q4KW::scales(b); }
  KVBENCH_INLINE static __m256i mins(const uint8_t* b) { return Q4KW::mins(b); }
};

// Q6_K (210 B): ql[128], qh[64], scales[16] (int8), d; value = code - 32.
// Element 128h + 32i + l: low 4 bits nibble i/2 of ql[64h + 32(i%2) + l],
// high 2 bits at shift 2i of qh[32h + l]. Lane j of chunk c: h = j/8,
// i = (j%8)/2, l = 16(j%2) + 4c: ql dword 16h + 8(i%2) + 4(j%2) + c, qh dword
// 8h + 4(j%2) + c, its bits 2i, 2i + 1 rotated to bits 4, 5.
struct Q6KW {
  static constexpr size_t kBytes = 210;
  static constexpr size_t kD = 208, kDmin = 208;
  static constexpr bool kMin = false;
  static constexpr int kOffset = 32;
  static constexpr ChunkLanes kQl =
      chunk_lanes([](int j) { return 16 * (j / 8) + 8 * ((j >> 1) & 1) + 4 * (j % 2); });
  static constexpr Lanes kNibble = lanes([](int j) { return 4 * ((j >> 2) & 1); });
  static constexpr ChunkLanes kQh = chunk_lanes([](int j) { return 8 * (j / 8) + 4 * (j % 2); });
  static constexpr Lanes kRotate = lanes([](int j) { return (4 - 2 * ((j >> 1) & 3)) & 31; });
  KVBENCH_INLINE static __m512i codes(const uint8_t* b, int c) {
    const __m512i ql =
        _mm512_srlv_epi32(_mm512_permutex2var_epi32(load512(b), lanes_of(kQl, c), load512(b + 64)),
                          lanes_of(kNibble));
    const __m512i qh = _mm512_permutexvar_epi32(lanes_of(kQh, c), load512(b + 128));
    const __m512i high =
        _mm512_and_si512(_mm512_rolv_epi32(qh, lanes_of(kRotate)), _mm512_set1_epi8(0x30));
    return _mm512_ternarylogic_epi32(ql, high, _mm512_set1_epi8(0x0F), kAandCorB);
  }
  KVBENCH_INLINE static __m512i scales(const uint8_t* b) {
    return _mm512_cvtepi8_epi32(load128(b + 192));
  }
  KVBENCH_INLINE static __m256i mins(const uint8_t*) { return _mm256_setzero_si256(); }
};

// Q2_K (84 B): scales[16] (low nibble scale, high nibble min), qs[64], d,
// dmin. Element e: 2 bits at shift 2((e % 128) / 32) of qs[32(e / 128) +
// e % 32]. Lane j of chunk c: qs dword 8(j/8) + 4(j%2) + c, shift 2((j%8)/2).
struct Q2KW {
  static constexpr size_t kBytes = 84;
  static constexpr size_t kD = 80, kDmin = 82;
  static constexpr bool kMin = true;
  static constexpr int kOffset = 0;
  static constexpr ChunkLanes kQs = chunk_lanes([](int j) { return 8 * (j / 8) + 4 * (j % 2); });
  static constexpr Lanes kShift = lanes([](int j) { return 2 * ((j >> 1) & 3); });
  KVBENCH_INLINE static __m512i codes(const uint8_t* b, int c) {
    const __m512i x = _mm512_permutexvar_epi32(lanes_of(kQs, c), load512(b + 16));
    return _mm512_and_si512(_mm512_srlv_epi32(x, lanes_of(kShift)), _mm512_set1_epi8(0x03));
  }
  KVBENCH_INLINE static __m512i scales(const uint8_t* b) {
    return _mm512_and_si512(_mm512_cvtepu8_epi32(load128(b)), _mm512_set1_epi32(0x0F));
  }
  KVBENCH_INLINE static __m256i mins(const uint8_t* b) {
    return _mm256_srli_epi16(_mm256_cvtepu8_epi16(load128(b)), 4);
  }
};

// ---------------------------------------------------------------------------
// Packed activations. Per Q8_K row: per super-block kPackedBlock bytes
//   [chunk 0..3 in sub-block lanes: 4 x 64 B][aux: 64 B]
// where aux is, for min types, the 16 int16 bsums twice (the vpmaddwd partner
// of two rows' mins), for offset types the int32 lanes -kOffset * sum of the
// sub-block's activations (the start value of its accumulators); then the nb
// f32 d_a, padded to 64 B.
constexpr size_t kPackedBlock = 320;
constexpr size_t kAux = 256;
size_t packed_row_bytes(int64_t nb) {
  const size_t n = static_cast<size_t>(nb);
  return n * kPackedBlock + (n * sizeof(float) + 63) / 64 * 64;
}
const float* packed_d(const uint8_t* row, int64_t nb) {
  return reinterpret_cast<const float*>(row + static_cast<size_t>(nb) * kPackedBlock);
}

// Lane j of chunk c = qs dword 4j + c: from dwords 0-31 for j < 8, 32-63 above.
constexpr ChunkLanes kActQs = chunk_lanes([](int j) { return (4 * j) & 31; });

template <class K>
void pack_activations(const uint8_t* a, int64_t nb, uint8_t* out) {
  float* d = reinterpret_cast<float*>(out + static_cast<size_t>(nb) * kPackedBlock);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* ab = a + b * kQ8_KBytes;
    uint8_t* ob = out + b * kPackedBlock;
    const __m512i q0 = load512(ab + 4), q1 = load512(ab + 68);
    const __m512i q2 = load512(ab + 132), q3 = load512(ab + 196);
    __m512i sum = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      const __m512i idx = lanes_of(kActQs, c);
      const __m512i v = _mm512_mask_blend_epi32(0xFF00, _mm512_permutex2var_epi32(q0, idx, q1),
                                                _mm512_permutex2var_epi32(q2, idx, q3));
      _mm512_storeu_si512(ob + 64 * c, v);
      if constexpr (K::kOffset > 0)
        sum = _mm512_dpbusd_epi32(sum, _mm512_set1_epi8(static_cast<char>(K::kOffset)), v);
    }
    if constexpr (K::kMin) {
      _mm512_storeu_si512(ob + kAux, _mm512_broadcast_i64x4(load256(ab + 260)));
    } else {
      _mm512_storeu_si512(ob + kAux, _mm512_sub_epi32(_mm512_setzero_si512(), sum));
    }
    std::memcpy(d + b, ab, sizeof(float));
  }
  const size_t tail = packed_row_bytes(nb) - static_cast<size_t>(nb) * (kPackedBlock + 4);
  std::memset(d + nb, 0, tail);
}

// Per thread, reused: the packed activations of the current token group.
struct alignas(64) Line {
  uint8_t bytes[64];
};
std::vector<Line>& pack_buffer() {
  thread_local std::vector<Line> buffer;
  return buffer;
}

// ---------------------------------------------------------------------------
// The micro-kernel.

// [isum of rows 0..3 | msum of rows 0..3]: a0..a3 are the scaled lane
// vectors of rows 0..3 (their 16 lanes sum to isum); x, y the vpmaddwd
// products of [mins r0 | mins r1], [mins r2 | mins r3] with the bsums (each
// 256-bit half sums to a row's msum). Without mins, the upper half repeats isum.
template <bool kMin>
KVBENCH_INLINE __m256i reduce_rows(__m512i a0, __m512i a1, __m512i a2, __m512i a3, __m512i x,
                                   __m512i y) {
  // Halves: [a0 | a1], [a2 | a3] as 8 lanes each.
  const __m512i ab = _mm512_add_epi32(_mm512_shuffle_i64x2(a0, a1, _MM_SHUFFLE(1, 0, 1, 0)),
                                      _mm512_shuffle_i64x2(a0, a1, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512i cd = _mm512_add_epi32(_mm512_shuffle_i64x2(a2, a3, _MM_SHUFFLE(1, 0, 1, 0)),
                                      _mm512_shuffle_i64x2(a2, a3, _MM_SHUFFLE(3, 2, 3, 2)));
  // 128-bit lane r: 4 lanes of row r.
  const auto quarters = [](__m512i u, __m512i v) {
    return _mm512_add_epi32(_mm512_shuffle_i64x2(u, v, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i64x2(u, v, _MM_SHUFFLE(3, 1, 3, 1)));
  };
  const __m512i s4 = quarters(ab, cd);
  const __m512i m4 = kMin ? quarters(x, y) : s4;
  // Per 128-bit lane [s0 + s2, s1 + s3, m0 + m2, m1 + m3], then [S, S, M, M].
  __m512i q = _mm512_add_epi32(_mm512_unpacklo_epi64(s4, m4), _mm512_unpackhi_epi64(s4, m4));
  q = _mm512_add_epi32(q, _mm512_shuffle_epi32(q, _MM_PERM_CDAB));
  return _mm512_castsi512_si256(_mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0), q));
}

// Row r's accumulators are final here, and nothing is loaded before this
// point for later: an empty asm that takes them in registers and clobbers
// memory. Without it the compiler hoists the next rows' loads and decodes and
// sinks this row's scale multiplies, keeping far more than 32 registers live
// (spilling most of them); with it each row is decoded, multiplied and
// scaled in turn, which needs the kR x T accumulators, one chunk of codes and
// its temporaries. (It also makes each row load the activations from L1
// again, instead of keeping the first row's chunks for the others.)
template <int T>
KVBENCH_INLINE void settle(__m512i (&acc)[T]) {
  KVBENCH_UNROLL
  for (int t = 0; t < T; ++t) asm volatile("" : "+v"(acc[t]));
  asm volatile("" ::: "memory");
}

// Decode streams the weights from memory once: ask for the same super-block
// kPrefetchRows rows ahead, into L2.
template <class K>
KVBENCH_INLINE void prefetch_ahead(const uint8_t* wb, size_t w_stride) {
  const char* ahead = reinterpret_cast<const char*>(wb + kPrefetchRows * w_stride);
  KVBENCH_UNROLL
  for (size_t off = 0; off < K::kBytes; off += 64) _mm_prefetch(ahead + off, _MM_HINT_T1);
  _mm_prefetch(ahead + K::kBytes - 1, _MM_HINT_T1);
}

// One weight row's super-block wb against T packed activations (pb: the
// super-block in the first packed row): acc[t] = its lane vectors, scaled, so
// that their 16 lanes sum to isum. Chunk by chunk: decode (one register),
// then T vpdpbusd with the activations straight from L1.
template <class K, int T>
KVBENCH_INLINE void row_lanes(const uint8_t* wb, const uint8_t* pb, size_t prow,
                              __m512i (&acc)[T]) {
  KVBENCH_UNROLL
  for (int t = 0; t < T; ++t)
    acc[t] = K::kOffset > 0 ? _mm512_load_si512(pb + t * prow + kAux) : _mm512_setzero_si512();
  KVBENCH_UNROLL
  for (int c = 0; c < 4; ++c) {
    const __m512i v = K::codes(wb, c);
    KVBENCH_UNROLL
    for (int t = 0; t < T; ++t)
      acc[t] = _mm512_dpbusd_epi32(acc[t], v, _mm512_load_si512(pb + t * prow + 64 * c));
  }
  const __m512i scale = K::scales(wb);
  KVBENCH_UNROLL
  for (int t = 0; t < T; ++t) acc[t] = _mm512_mullo_epi32(acc[t], scale);
}

// [d of rows 0-3 | dmin of rows 0-3] as f32 (d again without mins).
template <class K>
KVBENCH_INLINE __m256 super_scales(const uint8_t* const (&wb)[kR]) {
  static_assert(kR == 4);
  return _mm256_cvtph_ps(_mm_setr_epi16(load_u16(wb[0] + K::kD), load_u16(wb[1] + K::kD),
                                        load_u16(wb[2] + K::kD), load_u16(wb[3] + K::kD),
                                        load_u16(wb[0] + K::kDmin), load_u16(wb[1] + K::kDmin),
                                        load_u16(wb[2] + K::kDmin), load_u16(wb[3] + K::kDmin)));
}

// kR weight rows (rows[r]: row r's first super-block; remainder rows repeat
// the last real one) x T packed activation rows over all nb super-blocks;
// out[t * ldo + r] for the rows in `store`. Not inlined: one function per
// shape keeps each register allocation apart.
template <class K, int T>
__attribute__((noinline)) void kquant_micro(const uint8_t* const (&rows)[kR], size_t w_stride,
                                            const uint8_t* packed, size_t prow, int64_t nb,
                                            float* out, int64_t ldo, __mmask8 store) {
  // Per activation: lanes 0-3 acc of rows 0-3, lanes 4-7 macc (min types).
  __m256 facc[T];
  KVBENCH_UNROLL
  for (int t = 0; t < T; ++t) facc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* pb = packed + b * kPackedBlock;
    const uint8_t* wb[kR];
    __m512i acc[kR][T];
    KVBENCH_UNROLL
    for (int r = 0; r < kR; ++r) {
      wb[r] = rows[r] + b * K::kBytes;
      if (T == 1) prefetch_ahead<K>(wb[r], w_stride);
      row_lanes<K, T>(wb[r], pb, prow, acc[r]);
      settle(acc[r]);
    }
    // The mins of rows 0, 1 and 2, 3 in the halves of one register each,
    // against the bsums twice (packed aux).
    __m512i m01 = _mm512_setzero_si512(), m23 = _mm512_setzero_si512();
    if constexpr (K::kMin) {
      m01 = _mm512_inserti64x4(_mm512_castsi256_si512(K::mins(wb[0])), K::mins(wb[1]), 1);
      m23 = _mm512_inserti64x4(_mm512_castsi256_si512(K::mins(wb[2])), K::mins(wb[3]), 1);
    }
    const __m256 dw = super_scales<K>(wb);
    KVBENCH_UNROLL
    for (int t = 0; t < T; ++t) {
      __m512i x = m01, y = m23;
      if constexpr (K::kMin) {
        const __m512i bsums = _mm512_load_si512(pb + t * prow + kAux);
        x = _mm512_madd_epi16(m01, bsums);
        y = _mm512_madd_epi16(m23, bsums);
      }
      const __m256i sums = reduce_rows<K::kMin>(acc[0][t], acc[1][t], acc[2][t], acc[3][t], x, y);
      // d_w * d_a, then one FMA: the float steps of quant_dot_scalar.cpp.
      const __m256 dd = _mm256_mul_ps(dw, _mm256_set1_ps(packed_d(packed + t * prow, nb)[b]));
      facc[t] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(sums), facc[t]);
    }
  }
  // acc - macc, the last float step.
  KVBENCH_UNROLL
  for (int t = 0; t < T; ++t) {
    __m128 v = _mm256_castps256_ps128(facc[t]);
    if constexpr (K::kMin) v = _mm_sub_ps(v, _mm256_extractf128_ps(facc[t], 1));
    _mm_mask_storeu_ps(out + t * ldo, store, v);
  }
}

// Up to kR rows from w against nt (1..kT) packed rows.
template <class K>
void kquant_rows(const uint8_t* w, size_t w_stride, int nr, const uint8_t* packed, size_t prow,
                 int64_t nt, int64_t nb, float* out, int64_t ldo) {
  const uint8_t* rows[kR];
  for (int r = 0; r < kR; ++r) rows[r] = w + std::min(r, nr - 1) * w_stride;
  const auto store = static_cast<__mmask8>((1u << nr) - 1);
  switch (nt) {
    case 1:
      return kquant_micro<K, 1>(rows, w_stride, packed, prow, nb, out, ldo, store);
    case 2:
      return kquant_micro<K, 2>(rows, w_stride, packed, prow, nb, out, ldo, store);
    case 3:
      return kquant_micro<K, 3>(rows, w_stride, packed, prow, nb, out, ldo, store);
    case 4:
      return kquant_micro<K, 4>(rows, w_stride, packed, prow, nb, out, ldo, store);
    case 5:
      return kquant_micro<K, 5>(rows, w_stride, packed, prow, nb, out, ldo, store);
    default:
      return kquant_micro<K, kT>(rows, w_stride, packed, prow, nb, out, ldo, store);
  }
}

// Activations in groups of up to kT (outer: a group's packed rows stay in
// L1), weight rows in groups of kR (inner, streamed; the last group repeats
// its last row and stores only the real ones). Every output goes through the
// same float steps whatever the group sizes.
template <class K>
void kquant_tile(const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* act,
                 size_t act_stride, int64_t n_act, int64_t n, float* out, int64_t ldo) {
  static_assert(kT <= 6, "kquant_rows instantiates T = 1..6");
  const int64_t nb = n / kQKK;
  if (n_rows == 0 || n_act == 0) return;
  if (nb == 0) {
    for (int64_t t = 0; t < n_act; ++t) std::fill(out + t * ldo, out + t * ldo + n_rows, 0.0f);
    return;
  }
  const size_t prow = packed_row_bytes(nb);
  auto& buffer = pack_buffer();
  const size_t need = prow * kT / sizeof(Line);
  if (buffer.size() < need) buffer.resize(need);
  auto* packed = reinterpret_cast<uint8_t*>(buffer.data());
  for (int64_t t = 0; t < n_act; t += kT) {
    const int64_t nt = std::min<int64_t>(kT, n_act - t);
    for (int64_t i = 0; i < nt; ++i)
      pack_activations<K>(act + (t + i) * act_stride, nb, packed + i * prow);
    for (int64_t r = 0; r < n_rows; r += kR) {
      const int nr = static_cast<int>(std::min<int64_t>(kR, n_rows - r));
      kquant_rows<K>(w + r * w_stride, w_stride, nr, packed, prow, nt, nb, out + t * ldo + r, ldo);
    }
  }
}

}  // namespace
}  // namespace kvbench::qdot

KVBENCH_TARGET_END()

namespace kvbench::qdot {

// Built from function addresses only (no AVX-512 code runs here).
TileFn kquant_avx512_tile(int kind) {
  switch (kind) {
    case kQ2_K:
      return kquant_tile<Q2KW>;
    case kQ4_K:
      return kquant_tile<Q4KW>;
    case kQ5_K:
      return kquant_tile<Q5KW>;
    case kQ6_K:
      return kquant_tile<Q6KW>;
    default:
      return nullptr;
  }
}

}  // namespace kvbench::qdot

#endif  // x86-64
