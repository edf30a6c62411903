// AVX2 + FMA + F16C kernels of the legacy types on the interleaved layout
// (model/ops/interleave.h): the AVX-512 kernels' scheme on 8 lanes. A 64-byte
// chunk of a group holds rows 0-7 in its first 32 bytes and rows 8-15 in the
// second, so each half of a group is one pass of 8 outputs per activation.
// pmaddubsw + pmaddwd stand in for vpdpbusd; Q8_0 uses the sign trick (|w|
// times a with w's sign) because u8 q + 128 times s8 would saturate int16.
// Float order: the legacy chain of quant_dot_scalar.cpp, one lane per output.
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

KVBENCH_TARGET_BEGIN("avx2,fma,f16c")

#include "model/ops/simd_avx2.h"

namespace kvbench::qdot::il {
namespace {

// Byte i = 0xFF where bit i of `bits` is set.
__m256i bits_to_bytes(uint32_t bits) {
  const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                        2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), shuf);
  const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
  return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

}  // namespace

// act_figures with vector sums: the same integers and the same f16
// conversions (exact), at about a tenth of the scalar loop's time.
void act_figures_avx2(bool min, const uint8_t* act, size_t act_stride, int64_t n_act, int64_t nb,
                      ActFigures& f) {
  const size_t block = min ? kQ8_1Bytes : kQ8_0Bytes;
  const size_t qs = min ? 4 : 2;
  f.stride = (static_cast<size_t>(3 * nb) + 15) / 16 * 16;
  if (f.data.size() < f.stride * static_cast<size_t>(n_act)) f.data.resize(f.stride * n_act);
  const __m256i sign = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t t = 0; t < n_act; ++t) {
    const uint8_t* row = act + t * act_stride;
    float* d = f.data.data() + t * f.stride;
    float* s = d + nb;
    auto* neg = reinterpret_cast<int32_t*>(d + 2 * nb);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = row + b * block;
      uint16_t h[2];
      std::memcpy(h, blk, 4);
      d[b] = _cvtsh_ss(h[0]);
      s[b] = min ? _cvtsh_ss(h[1]) : 0.0f;
      // sum(q) = sum(q + 128) - 32 * 128; psadbw sums the unsigned bytes.
      const __m256i sad =
          _mm256_sad_epu8(_mm256_xor_si256(load256(blk + qs), sign), _mm256_setzero_si256());
      const __m128i s2 =
          _mm_add_epi64(_mm256_castsi256_si128(sad), _mm256_extracti128_si256(sad, 1));
      const int64_t sum = _mm_cvtsi128_si64(s2) + _mm_extract_epi64(s2, 1) - 32 * 128;
      neg[b] = static_cast<int32_t>(-sum);
    }
  }
}

namespace {

// Half h (rows 8h..8h+7) of one group x kT activation rows (from t0) over all
// nb blocks: out[t * ldo + 8 h + r] for the rows r < `rows` of the half.
template <class F, int kT>
void micro(const uint8_t* w, int h, const uint8_t* act, size_t act_stride, const ActFigures& fig,
           int64_t t0, int64_t nb, float* out, int64_t ldo, int rows) {
  __m256 acc[kT];
  KVBENCH_UNROLL
  for (int t = 0; t < kT; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i nib = _mm256_set1_epi8(0x0F);
  const __m256i sixteen = _mm256_set1_epi8(16);
  const __m256i sign = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = w + b * F::kGroupBlock;
    const uint8_t* a[kT];
    __m256i is[kT];
    KVBENCH_UNROLL
    for (int t = 0; t < kT; ++t) {
      a[t] = act + (t0 + t) * act_stride + b * F::kActBlock + F::kActQs;
      is[t] = _mm256_setzero_si256();
      if constexpr (F::kShift >= 0 && !F::kQ8)  // Q8_0 multiplies signed codes
        is[t] = _mm256_slli_epi32(_mm256_set1_epi32(fig.negsum(t0 + t, nb)[b]), F::kShift);
    }
    KVBENCH_UNROLL
    for (int j = 0; j < F::kChunks; ++j) {
      const __m256i q = load256(gb + 64 * j + 32 * h);
      if constexpr (F::kQ8) {
        const __m256i ws = _mm256_xor_si256(q, sign);  // q, signed
        const __m256i wa = _mm256_abs_epi8(ws);
        KVBENCH_UNROLL
        for (int t = 0; t < kT; ++t) {
          const __m256i av = _mm256_set1_epi32(load_i32(a[t] + 4 * j));
          is[t] = _mm256_add_epi32(
              is[t], _mm256_madd_epi16(_mm256_maddubs_epi16(wa, _mm256_sign_epi8(av, ws)), ones));
        }
      } else {
        __m256i lo = _mm256_and_si256(q, nib);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
        if constexpr (F::kFive) {
          const uint8_t* mk = gb + F::kMasks + 16 * j + 4 * h;
          lo = _mm256_or_si256(lo, _mm256_and_si256(bits_to_bytes(load_i32(mk)), sixteen));
          hi = _mm256_or_si256(hi, _mm256_and_si256(bits_to_bytes(load_i32(mk + 8)), sixteen));
        }
        KVBENCH_UNROLL
        for (int t = 0; t < kT; ++t) {
          // Two products of at most 31 * 127 per int16 lane and two lanes:
          // no saturation.
          const __m256i p16 = _mm256_add_epi16(
              _mm256_maddubs_epi16(lo, _mm256_set1_epi32(load_i32(a[t] + 4 * j))),
              _mm256_maddubs_epi16(hi, _mm256_set1_epi32(load_i32(a[t] + 16 + 4 * j))));
          is[t] = _mm256_add_epi32(is[t], _mm256_madd_epi16(p16, ones));
        }
      }
    }
    const __m256 dw =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + F::kD + 16 * h)));
    __m256 mw = _mm256_setzero_ps();
    if constexpr (F::kMin)
      mw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + F::kM + 16 * h)));
    KVBENCH_UNROLL
    for (int t = 0; t < kT; ++t) {
      const __m256 dd = _mm256_mul_ps(dw, _mm256_set1_ps(fig.d(t0 + t)[b]));
      acc[t] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(is[t]), acc[t]);
      if constexpr (F::kMin)
        acc[t] = _mm256_fmadd_ps(mw, _mm256_set1_ps(fig.s(t0 + t, nb)[b]), acc[t]);
    }
  }
  KVBENCH_UNROLL
  for (int t = 0; t < kT; ++t) {
    float* o = out + (t0 + t) * ldo + 8 * h;
    if (rows >= 8) {
      _mm256_storeu_ps(o, acc[t]);
    } else {
      alignas(32) float v[8];
      _mm256_store_ps(v, acc[t]);
      std::memcpy(o, v, sizeof(float) * static_cast<size_t>(std::max(rows, 0)));
    }
  }
}

// One group (its first `rows` rows stored) x all n_act activations, 4 at a time.
template <class F>
void group(const uint8_t* w, const uint8_t* act, size_t act_stride, const ActFigures& fig,
           int64_t n_act, int64_t nb, float* out, int64_t ldo, int rows) {
  for (int h = 0; h < 2; ++h) {
    const int hr = rows - 8 * h;
    if (hr <= 0) break;
    int64_t t = 0;
    for (; t + 4 <= n_act; t += 4) micro<F, 4>(w, h, act, act_stride, fig, t, nb, out, ldo, hr);
    for (; t < n_act; ++t) micro<F, 1>(w, h, act, act_stride, fig, t, nb, out, ldo, hr);
  }
}

// n_groups whole groups, one at a time.
template <class F>
void groups(const uint8_t* w, size_t group_stride, int64_t n_groups, const uint8_t* act,
            size_t act_stride, const ActFigures& fig, int64_t n_act, int64_t nb, float* out,
            int64_t ldo) {
  for (int64_t g = 0; g < n_groups; ++g)
    group<F>(w + g * group_stride, act, act_stride, fig, n_act, nb, out + kRows * g, ldo, kRows);
}

}  // namespace

}  // namespace kvbench::qdot::il

#include "model/ops/quant_dot_interleaved_tiles.h"

namespace kvbench::qdot::il {

void interleaved_avx2_kernels(Kernels& k) { fill_tiles(k); }

}  // namespace kvbench::qdot::il

KVBENCH_TARGET_END()

#endif  // x86-64
