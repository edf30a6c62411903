// AVX2 + FMA + F16C path of the attention kernels: the shared algorithm
// (attention_impl.h) over 8-float vectors, f16 rows converted in registers,
// exp2 by a degree-7 polynomial (relative error ~2e-7 against std::exp2),
// vpmaddubsw for the int8-query scores (attention_avx2_q8.h).
#include "model/ops/attention_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

// Standard headers before the target attribute: their functions must stay
// plain (baseline) code, shared with every other file.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx2,fma,f16c")

#include "model/ops/attention_avx2_q8.h"
#include "model/ops/attention_x86.h"
#include "model/ops/simd_avx2.h"

namespace kvbench::attn {
namespace {

// Avx2Q8: the int8-query scores' integer kernels (attention_avx2_q8.h).
struct Avx2 : simd::F32x8, Avx2Q8 {
  static constexpr int kRegs = 16;
  static constexpr int kGemmCols = 2;
  static V load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static V load_bf16(const uint16_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static V load_i32(const int32_t* p) {
    return _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static V load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  // 4 bytes: low nibbles are the even elements, high nibbles the odd ones;
  // interleaving the two puts the 8 codes in element order.
  static V load_u4(const uint8_t* codes, int d) {
    int32_t w;
    std::memcpy(&w, codes + d / 2, 4);
    const __m128i b = _mm_cvtsi32_si128(w);
    const __m128i m = _mm_set1_epi8(15);
    const __m128i c =
        _mm_unpacklo_epi8(_mm_and_si128(b, m), _mm_and_si128(_mm_srli_epi16(b, 4), m));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(c));
  }
  // 8 bytes: their low nibbles (elements d, d + 2, ...) and high nibbles.
  static void load_u4_pair(const uint8_t* codes, int d, V& lo, V& hi) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + d / 2));
    const __m128i m = _mm_set1_epi8(15);
    lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_and_si128(b, m)));
    hi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(b, 4), m)));
  }
  // 2-bit codes through a table (lookup_u2): 2 bytes, element d + i at bits
  // 2i of the little-endian half word. vpermps reads the low 3 bits of its
  // index: element i's code plus the next code's low bit times 4, which
  // names a lane holding code i's value when lanes c and c + 4 hold it.
  static V lookup_u2(const uint8_t* codes, int d, V table) {
    uint16_t w;
    std::memcpy(&w, codes + d / 4, 2);
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    return _mm256_permutevar8x32_ps(table, _mm256_srlv_epi32(_mm256_set1_epi32(w), shifts));
  }
  // The codes 0, 1, 2, 3 in the lanes lookup_u2 reads code c from.
  static V u2_codes() { return _mm256_setr_ps(0, 1, 2, 3, 0, 1, 2, 3); }
  // The codes as floats, looked up in u2_codes (exact).
  static V load_u2(const uint8_t* codes, int d) { return lookup_u2(codes, d, u2_codes()); }
  // A Q2 group's four values min + c x step (a multiply, then an add, as
  // load_row): a shift and a vpermps per 8 codes where load_u2 then a
  // multiply and an add took four.
  static V u2_table(float min, float step) {
    return _mm256_add_ps(_mm256_mul_ps(u2_codes(), _mm256_set1_ps(step)), _mm256_set1_ps(min));
  }
  static void halves(const uint16_t* h, int n, float* out) { f16c_halves(h, n, out); }
  static float hsum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float hmax(V v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // Four horizontal sums at once: two rounds of pairwise adds, then the halves.
  static void hsum4(const V* a, float* out) {
    const V t01 = _mm256_hadd_ps(a[0], a[1]);
    const V t23 = _mm256_hadd_ps(a[2], a[3]);
    const V t = _mm256_hadd_ps(t01, t23);  // per 128-bit half: partial sums of a0..a3
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
  }
  static V exp2(V x) { return exp2_taylor<Avx2>(x); }
  // p * 2^n with 2^n built in the exponent bits; 0 where x < -126.
  static V pow2_scale(V x, V p, V n) {
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const V r = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_and_ps(r, _mm256_cmp_ps(x, _mm256_set1_ps(-126.0f), _CMP_GE_OQ));
  }
  // bf16_round on each lane: add 0x7fff plus the kept part's lowest bit and
  // cut the low half; subnormals to signed zero.
  static V round_bf16(V x) {
    const __m256i b = _mm256_castps_si256(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    const __m256i r =
        _mm256_and_si256(_mm256_add_epi32(b, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))),
                         _mm256_set1_epi32(static_cast<int>(0xffff0000u)));
    const __m256i sub = _mm256_cmpeq_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7f800000)),
                                           _mm256_setzero_si256());
    const __m256i sign = _mm256_and_si256(b, _mm256_set1_epi32(static_cast<int>(0x80000000u)));
    return _mm256_castsi256_ps(_mm256_blendv_epi8(r, sign, sub));
  }
};

}  // namespace
}  // namespace kvbench::attn

#include "model/ops/attention_impl.h"

namespace kvbench::attn {
namespace {
constexpr Kernels kAvx2Kernels = make_kernels<Avx2>();
}  // namespace
}  // namespace kvbench::attn

KVBENCH_TARGET_END()

namespace kvbench::attn {
const Kernels* avx2_kernels() { return &kAvx2Kernels; }
}  // namespace kvbench::attn

#endif  // x86-64
