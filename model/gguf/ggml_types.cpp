// GGML element types: the id table, block layouts, and scalar reference
// (de)quantization of the blocks exactly as they sit in GGUF files.
//
// Everything here reads and writes blocks byte by byte (little-endian, as GGUF
// stores them), so no block struct, alignment or host byte order is assumed and
// a row may start at any address. These functions are the reference the fast
// kernels are tested against: clarity over speed.
//
// Layouts were learned from ggml's ggml-common.h / ggml-quants.c; the code is
// our own. The dequantizers evaluate the same float expressions in the same
// order as ggml's reference dequantizers, so they give bit-identical results.

#include "model/gguf/ggml_types.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

namespace kvbench {
namespace {

// ---------------------------------------------------------------------------
// Type table

struct Entry {
  uint32_t id;
  TypeTraits traits;
};

// Every id GGML currently defines. Ids that were defined once but whose support
// GGML removed from GGUF files (4 Q4_2, 5 Q4_3, 31..33 Q4_0_4_4/4_8/8_8,
// 36..38 IQ4_NL_4_4/4_8/8_8) are treated as never defined: no current reader
// can load them, and their interleaved layouts were never stable.
//
// "dequantizable" is also "quantizable": quantize_row supports exactly the
// types marked true. The integer types are not: they hold indices and counts,
// not weights, and I32/I64 do not fit a float exactly.
constexpr Entry kTable[] = {
    {0, {"F32", 1, 4, true}},          {1, {"F16", 1, 2, true}},
    {2, {"Q4_0", 32, 18, true}},       {3, {"Q4_1", 32, 20, true}},
    {6, {"Q5_0", 32, 22, true}},       {7, {"Q5_1", 32, 24, true}},
    {8, {"Q8_0", 32, 34, true}},       {9, {"Q8_1", 32, 36, true}},
    {10, {"Q2_K", 256, 84, true}},     {11, {"Q3_K", 256, 110, true}},
    {12, {"Q4_K", 256, 144, true}},    {13, {"Q5_K", 256, 176, true}},
    {14, {"Q6_K", 256, 210, true}},    {15, {"Q8_K", 256, 292, true}},
    {16, {"IQ2_XXS", 256, 66, false}}, {17, {"IQ2_XS", 256, 74, false}},
    {18, {"IQ3_XXS", 256, 98, false}}, {19, {"IQ1_S", 256, 50, false}},
    {20, {"IQ4_NL", 32, 18, false}},   {21, {"IQ3_S", 256, 110, false}},
    {22, {"IQ2_S", 256, 82, false}},   {23, {"IQ4_XS", 256, 136, false}},
    {24, {"I8", 1, 1, false}},         {25, {"I16", 1, 2, false}},
    {26, {"I32", 1, 4, false}},        {27, {"I64", 1, 8, false}},
    {28, {"F64", 1, 8, true}},         {29, {"IQ1_M", 256, 56, false}},
    {30, {"BF16", 1, 2, true}},        {34, {"TQ1_0", 256, 54, false}},
    {35, {"TQ2_0", 256, 66, false}},   {39, {"MXFP4", 32, 17, false}},
    {40, {"NVFP4", 64, 36, false}},    {41, {"Q1_0", 128, 18, false}},
};

constexpr uint32_t kIdLimit = 42;  // one past the largest id in kTable

// id -> index into kTable, -1 where GGML defines nothing.
constexpr std::array<int8_t, kIdLimit> make_index() {
  std::array<int8_t, kIdLimit> index{};
  for (auto& i : index) i = -1;
  for (size_t i = 0; i < std::size(kTable); ++i) index[kTable[i].id] = static_cast<int8_t>(i);
  return index;
}
constexpr std::array<int8_t, kIdLimit> kIndex = make_index();

const TypeTraits* find_traits(uint32_t id) {
  if (id >= kIdLimit || kIndex[id] < 0) return nullptr;
  return &kTable[kIndex[id]].traits;
}

// ---------------------------------------------------------------------------
// Little-endian field access

uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t load_u32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
uint64_t load_u64(const uint8_t* p) {
  return uint64_t{load_u32(p)} | (uint64_t{load_u32(p + 4)} << 32);
}
void store_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
void store_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void store_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
float load_f16(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }
void store_f16(uint8_t* p, float v) { store_u16(p, fp32_to_fp16(v)); }

// ---------------------------------------------------------------------------
// Rounding helpers. Float -> int casts of NaN or out-of-range values are UB, so
// every conversion goes through clamp_int, which maps NaN to `lo`.

int clamp_int(float v, int lo, int hi) {
  if (!(v >= static_cast<float>(lo))) return lo;
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(v);
}
// Round half to even (ggml's nearest_int, used by all K-quants).
int round_even(float v, int lo, int hi) { return clamp_int(std::nearbyint(v), lo, hi); }
// Round half away from zero (roundf, used by Q8_0 / Q8_1).
int round_away(float v, int lo, int hi) { return clamp_int(std::round(v), lo, hi); }
// ggml's legacy 4/5-bit quantizers compute (int8_t)(v + offset + 0.5f): for the
// non-negative values they produce this truncation is round-half-up.
int round_half_up(float v_plus_half, int lo, int hi) { return clamp_int(v_plus_half, lo, hi); }

// Smallest non-negative finite fp16 >= v (v >= 0), capped at 65504. Our
// K-quant scale search rounds super-block scales up so that every sub-block
// scale still fits its 4/6/8-bit field after fp16 rounding.
uint16_t fp16_round_up(float v) {
  if (!(v > 0.0f)) return 0;
  uint16_t h = fp32_to_fp16(v);
  if (h >= 0x7c00) return 0x7bff;
  if (fp16_to_fp32(h) < v) ++h;
  return h >= 0x7c00 ? uint16_t{0x7bff} : h;
}

// The signed value of largest magnitude among x[0..n) (the first of equal
// magnitudes; 0 when all are 0 or NaN).
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// ---------------------------------------------------------------------------
// Legacy 32-element blocks. Element order inside a block: the 4-bit variants
// pack element j (low nibble) and element j+16 (high nibble) into qs[j].

constexpr int kQK = 32;
constexpr int kQK_K = 256;

// The legacy 4- and 5-bit blocks, by kBits (4, 5) and kMin (with a min m):
//   Q4_0 (18 B): d (f16), qs[16].                       x = (q - 8) * d
//   Q4_1 (20 B): d (f16), m (f16), qs[16].              x = q * d + m
//   Q5_0 (22 B): d (f16), qh (u32), qs[16].             x = (q - 16) * d
//   Q5_1 (24 B): d (f16), m (f16), qh (u32), qs[16].    x = q * d + m
// qs[j]: the low 4 bits of element j (low nibble) and of element j + 16 (high
// nibble); qh (little endian): bit j = the 5th bit of element j.
template <int kBits, bool kMin>
struct Legacy {
  static constexpr int kQh = kMin ? 4 : 2;  // byte offset of qh (5-bit)
  static constexpr int kQs = kBits == 5 ? kQh + 4 : kQh;
  static constexpr int kMaxCode = (1 << kBits) - 1;
  static constexpr int kZero = 1 << (kBits - 1);  // code of 0 without a min
};

template <int kBits, bool kMin>
void dequant_legacy(const uint8_t* b, float* y) {
  using L = Legacy<kBits, kMin>;
  const float d = load_f16(b);
  const float m = kMin ? load_f16(b + 2) : 0.0f;
  const uint32_t qh = kBits == 5 ? load_u32(b + L::kQh) : 0;
  const uint8_t* qs = b + L::kQs;
  for (int j = 0; j < kQK / 2; ++j) {
    int q0 = qs[j] & 0x0F, q1 = qs[j] >> 4;
    if constexpr (kBits == 5) {
      q0 |= static_cast<int>((qh >> j) & 1) << 4;
      q1 |= static_cast<int>((qh >> (j + 16)) & 1) << 4;
    }
    if constexpr (kMin) {
      y[j] = q0 * d + m;
      y[j + kQK / 2] = q1 * d + m;
    } else {
      y[j] = (q0 - L::kZero) * d;
      y[j + kQK / 2] = (q1 - L::kZero) * d;
    }
  }
}

// As ggml. Without a min: d = (signed value of largest magnitude) / -kZero,
// so that value maps to q = 0 exactly and the opposite extreme may clip to
// kMaxCode (error up to d); q = x / d + kZero rounded half up. With a min:
// d = (max - min) / kMaxCode, m = min; the codes use the unrounded d and min.
template <int kBits, bool kMin>
void quant_legacy(const float* x, uint8_t* b) {
  using L = Legacy<kBits, kMin>;
  float d = 0.0f, min = 0.0f;
  if constexpr (kMin) {
    min = std::numeric_limits<float>::max();
    float max = -min;
    for (int j = 0; j < kQK; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    d = (max - min) / L::kMaxCode;
  } else {
    d = signed_absmax(x, kQK) / -L::kZero;
  }
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(b, d);
  if constexpr (kMin) store_f16(b + 2, min);
  uint32_t qh = 0;
  uint8_t* qs = b + L::kQs;
  for (int j = 0; j < kQK / 2; ++j) {
    int q0, q1;
    if constexpr (kMin) {
      q0 = round_half_up((x[j] - min) * id + 0.5f, 0, L::kMaxCode);
      q1 = round_half_up((x[j + kQK / 2] - min) * id + 0.5f, 0, L::kMaxCode);
    } else {
      constexpr float kOffset = L::kZero + 0.5f;  // 8.5f, 16.5f
      q0 = round_half_up(x[j] * id + kOffset, 0, L::kMaxCode);
      q1 = round_half_up(x[j + kQK / 2] * id + kOffset, 0, L::kMaxCode);
    }
    qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
    qh |= uint32_t(q0 >> 4) << j;
    qh |= uint32_t(q1 >> 4) << (j + 16);
  }
  if constexpr (kBits == 5) store_u32(b + L::kQh, qh);
}

// Q8_0 block (34 B): d (f16), qs[32] (int8, element order). x = q * d.
void dequant_q8_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<int8_t>(b[2 + j]) * d;
}

// As ggml: d = amax / 127, q = roundf(x / d) (half away from zero).
// Returns sum(q) for Q8_1.
int quant_q8(const float* x, uint8_t* d_field, uint8_t* qs, float* d_out) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(d_field, d);
  int sum = 0;
  for (int j = 0; j < kQK; ++j) {
    const int q = round_away(x[j] * id, -127, 127);
    qs[j] = static_cast<uint8_t>(static_cast<int8_t>(q));
    sum += q;
  }
  *d_out = d;
  return sum;
}
void quant_q8_0(const float* x, uint8_t* b) {
  float d;
  quant_q8(x, b, b + 2, &d);
}

// Q8_1 block (36 B): d (f16), s (f16, = d * sum(q), only for dot products),
// qs[32] (int8, element order). x = q * d.
void dequant_q8_1(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<int8_t>(b[4 + j]) * d;
}
void quant_q8_1(const float* x, uint8_t* b) {
  float d;
  const int sum = quant_q8(x, b, b + 4, &d);
  store_f16(b + 2, static_cast<float>(sum) * d);  // unrounded d, as ggml
}

// ---------------------------------------------------------------------------
// K-quants: 256-element super-blocks of 16 or 8 sub-blocks, each sub-block with
// its own small integer scale (and min) multiplied by an f16 super-block scale.
//
// Dequantizers mirror ggml exactly. The quantizers are our own simpler scale
// search, NOT ggml's (ggml runs a weighted least-squares search per sub-block,
// make_qkx2_quants / make_qx_quants, and may clip outliers). Ours chooses, per
// sub-block, the smallest scale whose grid still covers every value, and
// rounds all scale fields UP (super-block scales to the next f16, sub-block
// scales with ceil), so nothing is ever clipped. Each value then goes to the
// nearest grid point (round half to even, as ggml's final pass). Guarantee,
// with D / Dmin the stored super-block scale / min scale:
//   affine types (Q2_K, Q4_K, Q5_K; x = s*q - m, q in 0..nmax):
//     |err| <= s/2,  s <= (hi - lo + Dmin) / nmax + D,
//     where lo = min(0, min x), hi = max x over the sub-block;
//   symmetric types (Q3_K, Q6_K; x = s*q, q in -qneg..qpos):
//     |err| <= |s|/2, |s| <= need + D,
//     need = min(max(N/qneg, P/qpos), max(P/qneg, N/qpos)),
//     P = max(0, max x), N = max(0, -min x) over the sub-block;
//   and D <= (max need over sub-blocks) / smax rounded up to f16.
// The RMS error is a little worse than ggml's on Gaussian data (no clipping,
// scales rounded up), the worst case is better; it's only used to write test
// models.

// 6-bit (scale, min) pairs of Q4_K / Q5_K, packed in 12 bytes: pairs 0..3 in
// the low 6 bits of bytes 0..3 (scale) and 4..7 (min); pairs 4..7 keep their
// low 4 bits in bytes 8..11 (scale low nibble, min high nibble) and their top
// 2 bits in the top 2 bits of bytes 0..3 (scale) and 4..7 (min).
void get_scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}
void set_scale_min_k4(const int* ls, const int* lm, uint8_t* q) {
  std::memset(q, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      q[j] = static_cast<uint8_t>(ls[j]);
      q[j + 4] = static_cast<uint8_t>(lm[j]);
    } else {
      q[j + 4] = static_cast<uint8_t>((ls[j] & 0x0F) | ((lm[j] & 0x0F) << 4));
      q[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      q[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
}

// The affine search shared by Q2_K (16 x 16, q 0..3, 4-bit fields), Q4_K and
// Q5_K (8 x 32, q 0..15 / 0..31, 6-bit fields). Fills the f16 super scales,
// the sub-block fields and the levels L[256].
struct AffineFit {
  uint16_t d = 0, dmin = 0;
  int ls[16] = {}, lm[16] = {};
  uint8_t L[kQK_K] = {};
};
void fit_affine(const float* x, int n_sub, int nmax, int smax, AffineFit& f) {
  const int len = kQK_K / n_sub;
  float need_m[16], hi[16], need_s[16];
  float max_m = 0.0f;
  for (int j = 0; j < n_sub; ++j) {
    float lo = 0.0f, h = -std::numeric_limits<float>::infinity();
    for (int i = 0; i < len; ++i) {
      lo = std::min(lo, x[j * len + i]);
      h = std::max(h, x[j * len + i]);
    }
    need_m[j] = -lo;  // the min field is unsigned: grid bottom is -m <= 0
    hi[j] = h;
    max_m = std::max(max_m, need_m[j]);
  }
  f.dmin = fp16_round_up(max_m / smax);
  const float dmin = fp16_to_fp32(f.dmin);
  float max_s = 0.0f;
  for (int j = 0; j < n_sub; ++j) {
    f.lm[j] = dmin > 0.0f ? clamp_int(std::ceil(need_m[j] / dmin), 0, smax) : 0;
    const float m = dmin * static_cast<float>(f.lm[j]);
    need_s[j] = std::max(0.0f, (hi[j] + m) / nmax);  // top of grid must reach hi
    max_s = std::max(max_s, need_s[j]);
  }
  f.d = fp16_round_up(max_s / smax);
  const float d = fp16_to_fp32(f.d);
  for (int j = 0; j < n_sub; ++j) {
    f.ls[j] = d > 0.0f ? clamp_int(std::ceil(need_s[j] / d), 0, smax) : 0;
    // Same float products as the dequantizer, so "nearest" is nearest to what
    // will actually be reconstructed.
    const float s = d * static_cast<float>(f.ls[j]);
    const float m = dmin * static_cast<float>(f.lm[j]);
    for (int i = 0; i < len; ++i) {
      const int k = j * len + i;
      f.L[k] = static_cast<uint8_t>(s > 0.0f ? round_even((x[k] + m) / s, 0, nmax) : 0);
    }
  }
}

// The symmetric search shared by Q3_K (q -4..3, scales -32..31 of which we use
// -31..31) and Q6_K (q -32..31, int8 scales of which we use -127..127).
// 16 sub-blocks of 16. L holds q + qneg.
struct SymFit {
  uint16_t d = 0;
  int ls[16] = {};
  uint8_t L[kQK_K] = {};
};
void fit_symmetric(const float* x, int qneg, int qpos, int smax, SymFit& f) {
  float need[16];  // signed: the sign of the sub-block scale
  float max_need = 0.0f;
  for (int j = 0; j < 16; ++j) {
    float p = 0.0f, n = 0.0f;
    for (int i = 0; i < 16; ++i) {
      p = std::max(p, x[j * 16 + i]);
      n = std::max(n, -x[j * 16 + i]);
    }
    // s > 0 covers [-qneg*s, qpos*s]; s < 0 covers [-qpos*|s|, qneg*|s|].
    // The longer side of the grid goes where the larger magnitude is.
    const float pos = std::max(n / qneg, p / qpos);
    const float neg = std::max(p / qneg, n / qpos);
    need[j] = neg <= pos ? -neg : pos;
    max_need = std::max(max_need, std::fabs(need[j]));
  }
  f.d = fp16_round_up(max_need / smax);
  const float d = fp16_to_fp32(f.d);
  for (int j = 0; j < 16; ++j) {
    const int mag = d > 0.0f ? clamp_int(std::ceil(std::fabs(need[j]) / d), 0, smax) : 0;
    f.ls[j] = need[j] < 0.0f ? -mag : mag;
    const float s = d * static_cast<float>(f.ls[j]);
    for (int i = 0; i < 16; ++i) {
      const int k = j * 16 + i;
      const int q = s != 0.0f ? round_even(x[k] / s, -qneg, qpos) : 0;
      f.L[k] = static_cast<uint8_t>(q + qneg);
    }
  }
}

// Packs 2-bit levels L[256] as Q2_K / Q3_K store them in qs[64]: within each
// half of 128 elements, element 32*k + l goes to bits 2k..2k+1 of byte l.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int n = 0; n < kQK_K; n += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[n / 4 + l] = static_cast<uint8_t>((L[n + l] & 3) | ((L[n + l + 32] & 3) << 2) |
                                           ((L[n + l + 64] & 3) << 4) | ((L[n + l + 96] & 3) << 6));
    }
  }
}

// Q2_K block (84 B): scales[16] (sub-block j of 16 elements: low nibble =
// scale, high nibble = min), qs[64] (2-bit q, see pack_2bit), d (f16),
// dmin (f16). x = d*scale*q - dmin*min.
void dequant_q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = load_f16(b + 80);
  const float min = load_f16(b + 82);
  int is = 0;
  for (int n = 0; n < kQK_K; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const uint8_t sc = scales[is++];
        const float dl = d * static_cast<float>(sc & 0x0F);
        const float ml = min * static_cast<float>(sc >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * static_cast<float>((q[l + 16 * half] >> shift) & 3) - ml;
      }
    }
    q += 32;
  }
}
void quant_q2_k(const float* x, uint8_t* b) {
  AffineFit f;
  fit_affine(x, 16, 3, 15, f);
  for (int j = 0; j < 16; ++j) b[j] = static_cast<uint8_t>(f.ls[j] | (f.lm[j] << 4));
  pack_2bit(f.L, b + 16);
  store_u16(b + 80, f.d);
  store_u16(b + 82, f.dmin);
}

// Q3_K block (110 B): hmask[32] (high bit of q for element e is bit e/32 of
// hmask[e%32]), qs[64] (low 2 bits, see pack_2bit), scales[12] (16 6-bit
// values stored +32: low 4 bits of scale j in byte j (j<8, low nibble) or
// byte j-8 (high nibble), top 2 bits in byte 8 + j%4 at bit 2*(j/4)),
// d (f16). q = low2 - (high bit ? 0 : 4) in -4..3; x = d*(scale-32)*q.
int q3k_scale(const uint8_t* s, int j) {
  const int low = j < 8 ? (s[j] & 0x0F) : (s[j - 8] >> 4);
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}
void dequant_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hm = b;
  const uint8_t* q = b + 32;
  const uint8_t* scales = b + 96;
  const float d_all = load_f16(b + 108);
  int is = 0;
  uint8_t m = 1;
  for (int n = 0; n < kQK_K; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const float dl = d_all * static_cast<float>(q3k_scale(scales, is++));
        for (int l = 16 * half; l < 16 * half + 16; ++l) {
          const int v = ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
          *y++ = dl * static_cast<float>(v);
        }
      }
      m = static_cast<uint8_t>(m << 1);
    }
    q += 32;
  }
}
void quant_q3_k(const float* x, uint8_t* b) {
  SymFit f;
  fit_symmetric(x, 4, 3, 31, f);
  uint8_t* hm = b;
  uint8_t* scales = b + 96;
  std::memset(hm, 0, 32);
  std::memset(scales, 0, 12);
  for (int j = 0; j < 16; ++j) {
    const int l = f.ls[j] + 32;
    if (j < 8) {
      scales[j] |= static_cast<uint8_t>(l & 0x0F);
    } else {
      scales[j - 8] |= static_cast<uint8_t>((l & 0x0F) << 4);
    }
    scales[8 + j % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
  }
  uint8_t low[kQK_K];
  for (int k = 0; k < kQK_K; ++k) {  // L = q + 4 in 0..7: bit 2 is the high bit
    if (f.L[k] > 3) hm[k % 32] |= static_cast<uint8_t>(1 << (k / 32));
    low[k] = f.L[k] & 3;
  }
  pack_2bit(low, b + 32);
  store_u16(b + 108, f.d);
}

// Sub-blocks 2c and 2c + 1 of a Q4_K / Q5_K super-block: d * scale and
// dmin * min of each.
struct K45Pair {
  float d1, m1, d2, m2;
};
K45Pair k45_pair(const uint8_t* scales, int c, float d, float min) {
  int sc, m;
  get_scale_min_k4(2 * c, scales, &sc, &m);
  const float d1 = d * static_cast<float>(sc), m1 = min * static_cast<float>(m);
  get_scale_min_k4(2 * c + 1, scales, &sc, &m);
  const float d2 = d * static_cast<float>(sc), m2 = min * static_cast<float>(m);
  return {d1, m1, d2, m2};
}

// The fit of a Q4_K / Q5_K super-block (levels 0..nmax), its d, dmin and
// scales stored.
AffineFit fit_k45(const float* x, int nmax, uint8_t* b) {
  AffineFit f;
  fit_affine(x, 8, nmax, 63, f);
  store_u16(b, f.d);
  store_u16(b + 2, f.dmin);
  set_scale_min_k4(f.ls, f.lm, b + 4);
  return f;
}

// Q4_K block (144 B): d (f16), dmin (f16), scales[12] (8 6-bit scale/min
// pairs, see get_scale_min_k4), qs[128]: 4 chunks of 64 elements; in chunk c,
// byte qs[32c + l] holds element 64c + l (low nibble, sub-block 2c) and
// element 64c + 32 + l (high nibble, sub-block 2c+1). x = d*sc*q - dmin*m.
void dequant_q4_k(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const float min = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (int c = 0; c < 4; ++c) {
    const auto [d1, m1, d2, m2] = k45_pair(scales, c, d, min);
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    q += 32;
  }
}
void quant_q4_k(const float* x, uint8_t* b) {
  const AffineFit f = fit_k45(x, 15, b);
  uint8_t* q = b + 16;
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      q[32 * c + l] = static_cast<uint8_t>(f.L[64 * c + l] | (f.L[64 * c + 32 + l] << 4));
    }
  }
}

// Q5_K block (176 B): d (f16), dmin (f16), scales[12] (as Q4_K), qh[32],
// qs[128] (low 4 bits, arranged as Q4_K). The 5th bit of element 64c + l is
// bit 2c of qh[l], of element 64c + 32 + l bit 2c+1. x = d*sc*q - dmin*m.
void dequant_q5_k(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const float min = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  for (int c = 0; c < 4; ++c) {
    const auto [d1, m1, d2, m2] = k45_pair(scales, c, d, min);
    const int u1 = 1 << (2 * c), u2 = 2 << (2 * c);
    for (int l = 0; l < 32; ++l) {
      *y++ = d1 * static_cast<float>((ql[l] & 0x0F) + ((qh[l] & u1) ? 16 : 0)) - m1;
    }
    for (int l = 0; l < 32; ++l) {
      *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
    }
    ql += 32;
  }
}
void quant_q5_k(const float* x, uint8_t* b) {
  const AffineFit f = fit_k45(x, 31, b);
  uint8_t* qh = b + 16;
  uint8_t* ql = b + 48;
  std::memset(qh, 0, 32);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int lo = f.L[64 * c + l], hi = f.L[64 * c + 32 + l];
      ql[32 * c + l] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
      qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
  }
}

// Q6_K block (210 B): ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16]
// (int8, one per 16 elements), d (f16). Per half h of 128 elements, with
// ql' = ql + 64h, qh' = qh + 32h and l in 0..31:
//   element 128h +      l: low nibble of ql'[l],      bits 0-1 of qh'[l]
//   element 128h + 32 + l: low nibble of ql'[l + 32], bits 2-3 of qh'[l]
//   element 128h + 64 + l: high nibble of ql'[l],     bits 4-5 of qh'[l]
//   element 128h + 96 + l: high nibble of ql'[l + 32],bits 6-7 of qh'[l]
// q = 6-bit value - 32 in -32..31; x = d * scale * q.
void dequant_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const uint8_t* sc = b + 192;
  const float d = load_f16(b + 208);
  for (int n = 0; n < kQK_K; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      // (d * scale) * q, the order ggml evaluates it in.
      y[l] = d * static_cast<float>(static_cast<int8_t>(sc[is + 0])) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(static_cast<int8_t>(sc[is + 2])) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(static_cast<int8_t>(sc[is + 4])) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(static_cast<int8_t>(sc[is + 6])) * static_cast<float>(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}
void quant_q6_k(const float* x, uint8_t* b) {
  SymFit f;
  fit_symmetric(x, 32, 31, 127, f);
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  for (int n = 0; n < kQK_K; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t* L = f.L + n;
      ql[l] = static_cast<uint8_t>((L[l] & 0x0F) | ((L[l + 64] & 0x0F) << 4));
      ql[l + 32] = static_cast<uint8_t>((L[l + 32] & 0x0F) | ((L[l + 96] & 0x0F) << 4));
      qh[l] = static_cast<uint8_t>((L[l] >> 4) | ((L[l + 32] >> 4) << 2) | ((L[l + 64] >> 4) << 4) |
                                   ((L[l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
  for (int j = 0; j < 16; ++j) b[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(f.ls[j]));
  store_u16(b + 208, f.d);
}

// Q8_K block (292 B): d (f32!), qs[256] (int8), bsums[16] (int16 LE, sum of
// each 16 q's; only for dot products). x = d * q.
void dequant_q8_k(const uint8_t* b, float* y) {
  const float d = std::bit_cast<float>(load_u32(b));
  for (int j = 0; j < kQK_K; ++j) y[j] = d * static_cast<float>(static_cast<int8_t>(b[4 + j]));
}
// As ggml: the signed value of largest magnitude maps to -127 exactly,
// q = nearest (half to even) clipped to 127, d = 1/iscale stored as f32.
void quant_q8_k(const float* x, uint8_t* b) {
  const float max = signed_absmax(x, kQK_K);
  std::memset(b, 0, 292);
  if (max == 0.0f) return;  // d = 0, all q = 0
  const float iscale = -127.0f / max;
  store_u32(b, std::bit_cast<uint32_t>(1.0f / iscale));
  for (int j = 0; j < kQK_K; ++j) {
    b[4 + j] = static_cast<uint8_t>(static_cast<int8_t>(round_even(iscale * x[j], -128, 127)));
  }
  for (int j = 0; j < 16; ++j) {
    int sum = 0;
    for (int i = 0; i < 16; ++i) sum += static_cast<int8_t>(b[4 + 16 * j + i]);
    store_u16(b + 260 + 2 * j, static_cast<uint16_t>(static_cast<int16_t>(sum)));
  }
}

using BlockFn = void (*)(const uint8_t*, float*);
using QuantFn = void (*)(const float*, uint8_t*);

struct Codec {
  BlockFn dequant;
  QuantFn quant;
};

// The block types' codecs; plain types are handled in the row functions.
struct TypeCodec {
  GgmlType type;
  Codec codec;
};
constexpr TypeCodec kCodecs[] = {
    {GgmlType::Q4_0, {dequant_legacy<4, false>, quant_legacy<4, false>}},
    {GgmlType::Q4_1, {dequant_legacy<4, true>, quant_legacy<4, true>}},
    {GgmlType::Q5_0, {dequant_legacy<5, false>, quant_legacy<5, false>}},
    {GgmlType::Q5_1, {dequant_legacy<5, true>, quant_legacy<5, true>}},
    {GgmlType::Q8_0, {dequant_q8_0, quant_q8_0}},
    {GgmlType::Q8_1, {dequant_q8_1, quant_q8_1}},
    {GgmlType::Q2_K, {dequant_q2_k, quant_q2_k}},
    {GgmlType::Q3_K, {dequant_q3_k, quant_q3_k}},
    {GgmlType::Q4_K, {dequant_q4_k, quant_q4_k}},
    {GgmlType::Q5_K, {dequant_q5_k, quant_q5_k}},
    {GgmlType::Q6_K, {dequant_q6_k, quant_q6_k}},
    {GgmlType::Q8_K, {dequant_q8_k, quant_q8_k}},
};

// {nullptr, nullptr} for a type without blocks.
Codec block_codec(GgmlType type) {
  for (const TypeCodec& c : kCodecs)
    if (c.type == type) return c.codec;
  return {nullptr, nullptr};
}

}  // namespace

void k4_scale_min(int j, const uint8_t* scales, int* sc, int* m) {
  get_scale_min_k4(j, scales, sc, m);
}

// ---------------------------------------------------------------------------
// Public API

std::optional<TypeTraits> type_traits(uint32_t type_id) {
  const TypeTraits* t = find_traits(type_id);
  if (t == nullptr) return std::nullopt;
  return *t;
}

const TypeTraits& traits(GgmlType type) {
  const TypeTraits* t = find_traits(static_cast<uint32_t>(type));
  // Every enumerator is in the table; only a bad cast can miss.
  assert(t != nullptr && "traits(): not a GgmlType enumerator");
  static constexpr TypeTraits kUnknown{"?", 1, 0, false};
  return t != nullptr ? *t : kUnknown;
}

std::string_view type_name(GgmlType type) { return traits(type).name; }

bool row_is_whole(GgmlType type, int64_t n) {
  const TypeTraits& t = traits(type);
  return n >= 0 && n % t.block_size == 0;
}

size_t row_bytes(GgmlType type, int64_t n) {
  assert(row_is_whole(type, n));
  const TypeTraits& t = traits(type);
  return static_cast<size_t>(n / t.block_size) * t.block_bytes;
}

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const TypeTraits& t = traits(type);
  assert(t.dequantizable && "dequantize_row(): type is not dequantizable");
  assert(row_is_whole(type, n));
  const auto* s = static_cast<const uint8_t*>(src);
  switch (type) {
    case GgmlType::F32:
      for (int64_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(load_u32(s + 4 * i));
      return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(load_u16(s + 2 * i));
      return;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(load_u16(s + 2 * i));
      return;
    case GgmlType::F64:
      for (int64_t i = 0; i < n; ++i)
        dst[i] = static_cast<float>(std::bit_cast<double>(load_u64(s + 8 * i)));
      return;
    default:
      break;
  }
  const BlockFn fn = block_codec(type).dequant;
  if (fn == nullptr) {  // not dequantizable; only reachable with NDEBUG
    std::fill(dst, dst + n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  const int64_t nb = n / t.block_size;
  for (int64_t i = 0; i < nb; ++i)
    fn(s + i * static_cast<int64_t>(t.block_bytes), dst + i * t.block_size);
}

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  const TypeTraits& t = traits(type);
  assert(t.dequantizable && "quantize_row(): no quantizer for this type");
  assert(row_is_whole(type, n));
  auto* d = static_cast<uint8_t*>(dst);
  switch (type) {
    case GgmlType::F32:
      for (int64_t i = 0; i < n; ++i) store_u32(d + 4 * i, std::bit_cast<uint32_t>(src[i]));
      return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) store_u16(d + 2 * i, fp32_to_fp16(src[i]));
      return;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) store_u16(d + 2 * i, fp32_to_bf16(src[i]));
      return;
    case GgmlType::F64:
      for (int64_t i = 0; i < n; ++i)
        store_u64(d + 8 * i, std::bit_cast<uint64_t>(static_cast<double>(src[i])));
      return;
    default:
      break;
  }
  const QuantFn fn = block_codec(type).quant;
  if (fn == nullptr) {  // no quantizer; only reachable with NDEBUG
    std::memset(d, 0, static_cast<size_t>(n / t.block_size) * t.block_bytes);
    return;
  }
  const int64_t nb = n / t.block_size;
  for (int64_t i = 0; i < nb; ++i)
    fn(src + i * t.block_size, d + i * static_cast<int64_t>(t.block_bytes));
}

// ---------------------------------------------------------------------------
// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf, or NaN keeping its payload
  } else if (exp != 0) {
    bits = sign | ((exp + (127 - 15)) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal man * 2^-24: normalize so the leading 1 lands in bit 10.
    uint32_t e = 127 - 14;
    while ((man & 0x400u) == 0) {
      man <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((man & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t fp32_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) {  // NaN: keep the top payload bits, force quiet
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  // 65520 = halfway between 65504 (largest half) and 65536: ties go to the
  // even neighbour, which is 65536, i.e. overflow. So >= 65520 is inf.
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (a >= 0x38800000u) {  // >= 2^-14: normal half
    uint32_t h = (((a >> 23) - (127 - 15)) << 10) | ((a >> 13) & 0x3ffu);
    const uint32_t rest = a & 0x1fffu;                         // the 13 dropped bits
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: fine
    return static_cast<uint16_t>(sign | h);
  }
  // Subnormal half: result = round(|f| * 2^24). With |f| = m * 2^(e-150)
  // (m the 24-bit significand), that is m >> (126 - e) rounded to even.
  const int e = static_cast<int>(a >> 23);
  if (e < 102) return sign;  // |f| < 2^-25: rounds to zero (includes fp32 subnormals)
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const int shift = 126 - e;  // 14..24
  uint32_t h = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;  // 0x3ff + 1 = smallest normal: fine
  return static_cast<uint16_t>(sign | h);
}

// bfloat16 is the top half of a float: same exponent range, 7 mantissa bits.
float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

uint16_t fp32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN: force quiet so it stays NaN
  }
  // Round to nearest even on the dropped 16 bits: add just under half, plus
  // one more when the kept part is odd. Overflow carries into inf correctly;
  // subnormals are rounded, not flushed (as current ggml; some
  // older ggml versions flushed them to zero).
  const uint32_t bias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + bias) >> 16);
}

}  // namespace kvbench
