// AVX-512 VNNI kernels of the legacy types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) on
// the interleaved layout (model/ops/interleave.h): a register holds four
// elements of 16 rows, vpdpbusd meets it with one broadcast activation quad,
// and the float steps of a block (convert, scale, FMA) serve 16 outputs each.
// Float order: the legacy chain of quant_dot_scalar.cpp, one lane per output.
//
// Per block, 16 rows and one activation: 8 vpdpbusd in two sums, then their
// integer add, an integer start value, a conversion, a multiply and an FMA
// (two FMAs for Q4_1 / Q5_1); the weight codes are decoded once per block
// and group and meet kT activations. Measured alone (SmolLM2's 1536 x 576
// Q4_1, 512 tokens, one thread): Zen 4, 290-320 G int ops/s, about 65% of
// the measured vpdpbusd peak (123-152 for the earlier per-row kernels); a
// Xeon, 297.5, 69% of the ceiling this instruction mix allows there
// (BM_PeakVnniQ4_1Mix, docs/PERFORMANCE.md).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "model/ops/quant_dot_interleaved.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "model/ops/bytes.h"
#include "model/ops/interleave.h"
#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")

namespace kvbench::qdot::il {
namespace {

// How far ahead decode (one activation) prefetches weights into L2, in
// groups: a thread needs more misses in flight than L1 tracks to stream from
// memory (the planar kernels measured 24 GB/s without, 51-56 GB/s with 12-16
// rows ahead). Four groups are 64 rows.
constexpr int64_t kPrefetchGroups = 4;

// kG groups (16 rows each, group_stride bytes apart) x kT activation rows
// (from t0) over all nb blocks. out[t * ldo + 16 g + r]; the last group's
// lanes outside `last` are not stored.
template <class F, int kG, int kT>
void micro(const uint8_t* w, size_t group_stride, const uint8_t* act, size_t act_stride,
           const ActFigures& fig, int64_t t0, int64_t nb, float* out, int64_t ldo, __mmask16 last) {
  __m512 acc[kG][kT];
  KVBENCH_UNROLL
  for (int g = 0; g < kG; ++g) KVBENCH_UNROLL
  for (int t = 0; t < kT; ++t) acc[g][t] = _mm512_setzero_ps();
  const __m512i nib = _mm512_set1_epi8(0x0F);
  const __m512i sixteen = _mm512_set1_epi8(16);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* a[kT];
    // Two integer sums per output, over the first and the second half of the
    // block's chunks, added once at the end (integer adds: the same sum in
    // any order). One chain of 8 dependent vpdpbusd per block left the
    // machine waiting on their latency: SmolLM2's Q4_1 shapes, 512 tokens,
    // one thread, Xeon (AVX-512 VNNI), medians of 8 alternating rounds: 8-14%
    // faster than a single chain.
    __m512i is[kG][kT], is2[kG][kT];
    KVBENCH_UNROLL
    for (int t = 0; t < kT; ++t) {
      a[t] = act + (t0 + t) * act_stride + b * F::kActBlock + F::kActQs;
      __m512i start = _mm512_setzero_si512();
      if constexpr (F::kShift >= 0)
        start = _mm512_slli_epi32(_mm512_set1_epi32(fig.negsum(t0 + t, nb)[b]), F::kShift);
      KVBENCH_UNROLL
      for (int g = 0; g < kG; ++g) is[g][t] = start;
      KVBENCH_UNROLL
      for (int g = 0; g < kG; ++g) is2[g][t] = _mm512_setzero_si512();
    }
    KVBENCH_UNROLL
    for (int j = 0; j < F::kChunks; ++j) {
      __m512i lo[kG], hi[kG];
      KVBENCH_UNROLL
      for (int g = 0; g < kG; ++g) {
        const uint8_t* gb = w + g * group_stride + b * F::kGroupBlock;
        if (kT == 1) {  // decode streams from memory: see kPrefetchGroups
          _mm_prefetch(reinterpret_cast<const char*>(gb + kPrefetchGroups * group_stride + 64 * j),
                       _MM_HINT_T1);
          if (j == F::kChunks - 1)  // the masks and scales after the codes
            for (size_t off = 64 * F::kChunks; off < F::kGroupBlock; off += 64)
              _mm_prefetch(reinterpret_cast<const char*>(gb + kPrefetchGroups * group_stride + off),
                           _MM_HINT_T1);
        }
        const __m512i q = _mm512_loadu_si512(gb + 64 * j);
        if constexpr (F::kQ8) {
          lo[g] = q;
        } else {
          lo[g] = _mm512_and_si512(q, nib);
          hi[g] = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
          if constexpr (F::kFive) {
            const uint8_t* mk = gb + F::kMasks + 16 * j;
            lo[g] = _mm512_mask_add_epi8(lo[g], load_u64(mk), lo[g], sixteen);
            hi[g] = _mm512_mask_add_epi8(hi[g], load_u64(mk + 8), hi[g], sixteen);
          }
        }
      }
      KVBENCH_UNROLL
      for (int t = 0; t < kT; ++t) {
        const __m512i alo = _mm512_set1_epi32(load_i32(a[t] + 4 * j));
        if constexpr (F::kQ8) {
          KVBENCH_UNROLL
          for (int g = 0; g < kG; ++g) {
            __m512i& sum = j < F::kChunks / 2 ? is[g][t] : is2[g][t];
            sum = _mm512_dpbusd_epi32(sum, lo[g], alo);
          }
        } else {
          const __m512i ahi = _mm512_set1_epi32(load_i32(a[t] + 16 + 4 * j));
          KVBENCH_UNROLL
          for (int g = 0; g < kG; ++g) {
            __m512i& sum = j < F::kChunks / 2 ? is[g][t] : is2[g][t];
            sum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(sum, lo[g], alo), hi[g], ahi);
          }
        }
      }
    }
    KVBENCH_UNROLL
    for (int g = 0; g < kG; ++g) KVBENCH_UNROLL
    for (int t = 0; t < kT; ++t) is[g][t] = _mm512_add_epi32(is[g][t], is2[g][t]);
    KVBENCH_UNROLL
    for (int g = 0; g < kG; ++g) {
      const uint8_t* gb = w + g * group_stride + b * F::kGroupBlock;
      const __m512 dw =
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + F::kD)));
      __m512 mw = _mm512_setzero_ps();
      if constexpr (F::kMin)
        mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + F::kM)));
      KVBENCH_UNROLL
      for (int t = 0; t < kT; ++t) {
        const __m512 dd = _mm512_mul_ps(dw, _mm512_set1_ps(fig.d(t0 + t)[b]));
        acc[g][t] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(is[g][t]), acc[g][t]);
        if constexpr (F::kMin)
          acc[g][t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(fig.s(t0 + t, nb)[b]), acc[g][t]);
      }
    }
  }
  KVBENCH_UNROLL
  for (int g = 0; g < kG; ++g) {
    KVBENCH_UNROLL
    for (int t = 0; t < kT; ++t) {
      float* o = out + (t0 + t) * ldo + 16 * g;
      if (g == kG - 1) {
        _mm512_mask_storeu_ps(o, last, acc[g][t]);
      } else {
        _mm512_storeu_ps(o, acc[g][t]);
      }
    }
  }
}

// Activation rows [t0, n_act) of kG groups, kT at a time (prefill) and the
// rest one size down at a time.
template <class F, int kG>
void tokens(const uint8_t* w, size_t group_stride, const uint8_t* act, size_t act_stride,
            const ActFigures& fig, int64_t n_act, int64_t nb, float* out, int64_t ldo,
            __mmask16 last) {
  constexpr int kT = 8;
  int64_t t = 0;
  for (; t + kT <= n_act; t += kT)
    micro<F, kG, kT>(w, group_stride, act, act_stride, fig, t, nb, out, ldo, last);
  switch (n_act - t) {
#define KVBENCH_TAIL(n)                                                            \
  case n:                                                                          \
    micro<F, kG, n>(w, group_stride, act, act_stride, fig, t, nb, out, ldo, last); \
    break;
    KVBENCH_TAIL(7)
    KVBENCH_TAIL(6)
    KVBENCH_TAIL(5)
    KVBENCH_TAIL(4)
    KVBENCH_TAIL(3)
    KVBENCH_TAIL(2)
    KVBENCH_TAIL(1)
#undef KVBENCH_TAIL
    default:
      break;
  }
}

// n_groups whole groups. Decode (one activation) streams four groups at once
// (four independent vpdpbusd chains); prefill keeps one group's codes and
// meets kT activations with them.
template <class F>
void groups(const uint8_t* w, size_t group_stride, int64_t n_groups, const uint8_t* act,
            size_t act_stride, const ActFigures& fig, int64_t n_act, int64_t nb, float* out,
            int64_t ldo) {
  int64_t g = 0;
  if (n_act == 1) {
    for (; g + 4 <= n_groups; g += 4)
      micro<F, 4, 1>(w + g * group_stride, group_stride, act, act_stride, fig, 0, nb, out + 16 * g,
                     ldo, 0xFFFF);
  }
  for (; g < n_groups; ++g)
    tokens<F, 1>(w + g * group_stride, group_stride, act, act_stride, fig, n_act, nb, out + 16 * g,
                 ldo, 0xFFFF);
}

// One group, its lanes past `rows` not stored.
template <class F>
void group(const uint8_t* grp, const uint8_t* act, size_t act_stride, const ActFigures& fig,
           int64_t n_act, int64_t nb, float* out, int64_t ldo, int rows) {
  tokens<F, 1>(grp, 0, act, act_stride, fig, n_act, nb, out, ldo,
               static_cast<__mmask16>((1u << rows) - 1));
}

}  // namespace

}  // namespace kvbench::qdot::il

#include "model/ops/quant_dot_interleaved_tiles.h"

namespace kvbench::qdot::il {

void interleaved_avx512_kernels(Kernels& k) { fill_tiles(k); }

}  // namespace kvbench::qdot::il

KVBENCH_TARGET_END()

#endif  // x86-64
