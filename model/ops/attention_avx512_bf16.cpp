// AVX-512 BF16 products for the bf16 prefill attention
// (Kernels::prefill_tile_bf16, an option of the fast mode): Q.K and P.V by
// vdpbf16ps, 32 multiply-adds per instruction against 16 for vfmadd231ps,
// on bf16 pairs packed once per key tile (K, V) or per unit (Q), with the
// softmax between them in f32 as every table computes it (attention_impl.h).
// avx512_bf16_kernels() offers this table only where CPUID reports AVX-512
// BF16.
//
// The instruction's arithmetic, pinned down on a Zen 4 core: per 32-bit lane
// acc = fma(a_odd, b_odd, acc), then acc = fma(a_even, b_even, acc), each
// rounded to nearest even, subnormal inputs read as zero and subnormal
// results flushed to zero (6.4M random lanes, half of them in the subnormal
// range, matched f32 FMAs run in that order under MXCSR FTZ and DAZ). The
// conversion vcvtne2ps2bf16 is bf16_round on every finite float. So this
// table computes Bf16Emulated's numbers except where a partial sum is
// subnormal (tests/test_attention.cpp compares the two bit for bit).
#include "model/ops/attention_kernels.h"

#if defined(__x86_64__)

#include <cpuid.h>
#include <immintrin.h>

// Standard headers before the target attribute: their functions must stay
// plain (baseline) code, shared with every other file.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,avx2,fma,f16c")

#include "model/ops/attention_avx512_iface.h"
#include "model/ops/attention_impl.h"

namespace kvbench::attn {
namespace {

inline uint16_t high_half(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return static_cast<uint16_t>(b >> 16);
}

inline __m512 dp(__m512 acc, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh&>(a), reinterpret_cast<__m512bh&>(b));
}

// Layouts (each a pair of bf16 in one 32-bit word, the even element in the
// low half): K tile [head_dim / 2][kKeyTile] words; a query row's head_dim / 2
// words at the start of its f32 row; a weight row's kKeyTile / 2 words at the
// start of its f32 row; V pairs [npairs][head_dim] words (rows 2i and 2i + 1
// of the tile, element d of each).
struct Bf16Native {
  using I = Avx512;
  static constexpr bool kRound = true;

  static void put_keys(float* kt, int32_t j, int d, const float* vals, int n) {
    uint16_t* k16 = reinterpret_cast<uint16_t*>(kt);
    for (int i = 0; i < n; ++i) {
      const int e = d + i;
      k16[((e >> 1) * kKeyTile + j) * 2 + (e & 1)] = high_half(vals[i]);
    }
  }
  static void zero_columns(float* kt, int hd, int32_t count) {
    uint32_t* k32 = reinterpret_cast<uint32_t*>(kt);
    for (int p = 0; p < hd / 2; ++p)
      std::fill(k32 + p * kKeyTile + count, k32 + (p + 1) * kKeyTile, 0u);
  }
  // In place, ascending, 16 at a time (head_dim is a multiple of 16 here,
  // not always of 32): half words [d, d + 16) are written after floats
  // [d, d + 16) were read, below every float not yet read.
  static void prepare_queries(float* qs, int rows, int hd) {
    for (int r = 0; r < rows; ++r) {
      float* q = qs + r * hd;
      uint16_t* q16 = reinterpret_cast<uint16_t*>(q);
      for (int d = 0; d < hd; d += 16) {
        const __m256bh b = _mm512_cvtneps_pbh(I::load(q + d));
        std::memcpy(q16 + d, &b, 32);
      }
    }
  }
  // s[r][c] = sum over pairs p of the query's pair p . key c's pair p.
  template <int RB>
  static void qk(const float* qs, int hd, const float* kt, float* s) {
    constexpr int CV = I::kGemmCols;
    static_assert(kKeyTile % (CV * 16) == 0);
    const uint32_t* k32 = reinterpret_cast<const uint32_t*>(kt);
    const uint32_t* q32[RB];
    for (int r = 0; r < RB; ++r) q32[r] = reinterpret_cast<const uint32_t*>(qs + r * hd);
    for (int c0 = 0; c0 < kKeyTile; c0 += CV * 16) {
      __m512 acc[RB][CV];
      for (int r = 0; r < RB; ++r)
        for (int c = 0; c < CV; ++c) acc[r][c] = _mm512_setzero_ps();
      for (int p = 0; p < hd / 2; ++p) {
        __m512i kv[CV];
        for (int c = 0; c < CV; ++c) kv[c] = _mm512_loadu_si512(k32 + p * kKeyTile + c0 + c * 16);
        for (int r = 0; r < RB; ++r) {
          const __m512i qv = _mm512_set1_epi32(static_cast<int>(q32[r][p]));
          for (int c = 0; c < CV; ++c) acc[r][c] = dp(acc[r][c], qv, kv[c]);
        }
      }
      for (int r = 0; r < RB; ++r)
        for (int c = 0; c < CV; ++c) _mm512_storeu_ps(s + r * kKeyTile + c0 + c * 16, acc[r][c]);
    }
  }
  // In place as prepare_queries; the whole row (the weights past the tile's
  // keys are 0).
  static void prepare_weights(float* s, int rows, int /*npairs*/) {
    for (int r = 0; r < rows; ++r) {
      float* sr = s + r * kKeyTile;
      uint16_t* s16 = reinterpret_cast<uint16_t*>(sr);
      for (int j = 0; j < kKeyTile; j += 32) {
        const __m512bh b = _mm512_cvtne2ps_pbh(I::load(sr + j + 16), I::load(sr + j));
        std::memcpy(s16 + j, &b, 64);
      }
    }
  }
  template <KvElement E>
  static void prepare_values(const Rows& v, int hd, int32_t j0, int32_t nk, float* vt) {
    constexpr bool kParams = E == KvElement::Q8 || E == KvElement::Q4 || E == KvElement::Q2;
    float prm0[kParams ? kMaxRowParams : 1], prm1[kParams ? kMaxRowParams : 1];
    uint32_t* v32 = reinterpret_cast<uint32_t*>(vt);
    for (int32_t i = 0; 2 * i < nk; ++i) {
      const RowRef even = prepare_row<I, E>(v.row(j0 + 2 * i), hd, v.group_shift, nullptr, prm0);
      const bool has_odd = 2 * i + 1 < nk;
      const RowRef odd =
          has_odd ? prepare_row<I, E>(v.row(j0 + 2 * i + 1), hd, v.group_shift, nullptr, prm1)
                  : even;
      for (int d = 0; d < hd; d += 16) {
        const __m512 e = load_row<I, E>(even, d, hd);
        const __m512 o = has_odd ? load_row<I, E>(odd, d, hd) : _mm512_setzero_ps();
        const __m256bh eb = _mm512_cvtneps_pbh(e), ob = _mm512_cvtneps_pbh(o);
        const __m512i lo = _mm512_cvtepu16_epi32(reinterpret_cast<const __m256i&>(eb));
        const __m512i hi = _mm512_cvtepu16_epi32(reinterpret_cast<const __m256i&>(ob));
        _mm512_storeu_si512(v32 + int64_t{i} * hd + d,
                            _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
      }
    }
  }
  // acc[r][d, d + DC * 16) += sum over pairs i of weight pair i . V pair i.
  template <int RB, int DC>
  static void pv_block(const float* s, const uint32_t* v32, int npairs, int hd, int d, float* acc) {
    __m512 a[RB][DC];
    for (int r = 0; r < RB; ++r)
      for (int c = 0; c < DC; ++c) a[r][c] = I::load(acc + r * hd + d + c * 16);
    for (int i = 0; i < npairs; ++i) {
      __m512i vv[DC];
      for (int c = 0; c < DC; ++c) vv[c] = _mm512_loadu_si512(v32 + int64_t{i} * hd + d + c * 16);
      for (int r = 0; r < RB; ++r) {
        const uint32_t* w32 = reinterpret_cast<const uint32_t*>(s + r * kKeyTile);
        const __m512i w = _mm512_set1_epi32(static_cast<int>(w32[i]));
        for (int c = 0; c < DC; ++c) a[r][c] = dp(a[r][c], w, vv[c]);
      }
    }
    for (int r = 0; r < RB; ++r)
      for (int c = 0; c < DC; ++c) I::store(acc + r * hd + d + c * 16, a[r][c]);
  }
  template <int RB>
  static void pv_fixed(const float* s, const uint32_t* v32, int npairs, int hd, float* acc) {
    constexpr int DC = d_vectors_per_pass<I, RB>();
    int d = 0;
    for (; d + DC * 16 <= hd; d += DC * 16) pv_block<RB, DC>(s, v32, npairs, hd, d, acc);
    for (; d < hd; d += 16) pv_block<RB, 1>(s, v32, npairs, hd, d, acc);
  }
  static void pv(const float* s, int rows, const float* vt, int npairs, int hd, float* acc) {
    const uint32_t* v32 = reinterpret_cast<const uint32_t*>(vt);
    for (int r0 = 0; r0 < rows; r0 += 4) {
      const float* sr = s + r0 * kKeyTile;
      float* ar = acc + r0 * hd;
      with_count<4>(rows - r0, [&]<int R>() { pv_fixed<R>(sr, v32, npairs, hd, ar); });
    }
  }
};

}  // namespace

void bf16_native_pack_keys(const Rows& k, int hd, int32_t begin, int32_t count, float* kt) {
  pack_keys_kernel<Avx512, Bf16Native>(k, hd, begin, count, kt);
}
void bf16_native_prefill_tile(const PrefillTile& a, const PrefillWork& w) {
  prefill_tile_bf16_kernel<Avx512, Bf16Native>(a, w);
}

}  // namespace kvbench::attn

KVBENCH_TARGET_END()

namespace kvbench::attn {
// CPUID leaf 7, sub-leaf 1, EAX bit 5: AVX512_BF16. (The OS's AVX-512 state
// is the Avx512 path's own check.)
bool cpu_has_avx512_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
  return (a >> 5) & 1u;
}
}  // namespace kvbench::attn

#endif  // x86-64
