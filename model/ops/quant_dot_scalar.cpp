// Scalar reference of every quantized dot product, and the portable fallback.
//
// The order of float operations defined here is THE order: the AVX2 and
// AVX-512 kernels reproduce it exactly, so every path gives the same bits.
// Integer arithmetic inside a block is exact, so the SIMD paths may sum
// integers in any order; only the float steps below are fixed.
//
// Legacy types (blocks of 32; Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 weights): one FMA
// chain per output, block after block:
//   W[k], A[k]: the block's integer weight and activation values
//   acc = 0; for block b, with dd = d_w * d_a (f32 product):
//     acc = fma(dd, float(sum_k W[k] A[k]), acc)
//     min types (Q4_1, Q5_1; activations Q8_1 with s = d_a * sum(A) in f16):
//       acc = fma(m_w, s_a, acc)
//   result = acc
// Why this shape: in the interleaved layout (model/ops/interleave.h) 16 rows
// sit side by side, so a 512-bit register holds the chain of 16 outputs and
// each float step serves 16 rows; nothing is summed across lanes at the end.
//
// K-quants (super-blocks of 256; Q2_K..Q6_K weights, Q8_K activations): the
// whole super-block is one exact integer (sub-block scales included), so
//   acc = fma(d_w * d_a, float(sum_k scale(k) W[k] A[k]), acc)
//   min types (Q2_K, Q4_K, Q5_K): macc = fma(dmin_w * d_a, float(sum_s min_s bsum_s), macc)
//   result = acc - macc
//
// F32 / F16 / BF16 weights with f32 activations:
//   acc[16] = 0; acc[k % 16] = fma(w[k], a[k], acc[k % 16]); result = hsum16(acc)
//
// hsum16(v): s8[j] = v[j] + v[j+8]; s4[j] = s8[j] + s8[j+4];
//            s2[j] = s4[j] + s4[j+2]; result = s2[0] + s2[1]
// hsum over 8 lanes is the same tree from s8 on.
// a * b + c must not be fused behind our back: the order of float operations
// is the contract between the paths. (GCC in ISO mode does not fuse.)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include <bit>
#include <cmath>
#include <cstring>

#include "model/ops/quant_dot_kernels.h"
#include "model/ops/quant_dot_rows.h"
#include "model/ops/simd_target.h"  // KVBENCH_INLINE

namespace kvbench::qdot {
namespace {

uint16_t u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t u32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
float f16(const uint8_t* p) { return fp16_to_fp32(u16(p)); }

float hsum16(const float* v) {
  float s8[8], s4[4];
  for (int j = 0; j < 8; ++j) s8[j] = v[j] + v[j + 8];
  for (int j = 0; j < 4; ++j) s4[j] = s8[j] + s8[j + 4];
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

// ---------------------------------------------------------------------------
// Legacy blocks -> integer values in element order, scale d and min m.

struct Legacy {
  int w[kQK];
  float d = 0.0f;
  float m = 0.0f;
};

void decode_q4_0(const uint8_t* b, Legacy& o) {
  o.d = f16(b);
  for (int j = 0; j < 16; ++j) {
    o.w[j] = (b[2 + j] & 0x0F) - 8;
    o.w[j + 16] = (b[2 + j] >> 4) - 8;
  }
}
void decode_q4_1(const uint8_t* b, Legacy& o) {
  o.d = f16(b);
  o.m = f16(b + 2);
  for (int j = 0; j < 16; ++j) {
    o.w[j] = b[4 + j] & 0x0F;
    o.w[j + 16] = b[4 + j] >> 4;
  }
}
void decode_q5_0(const uint8_t* b, Legacy& o) {
  o.d = f16(b);
  const uint32_t qh = u32(b + 2);
  for (int j = 0; j < 16; ++j) {
    o.w[j] = ((b[6 + j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4)) - 16;
    o.w[j + 16] = ((b[6 + j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4)) - 16;
  }
}
void decode_q5_1(const uint8_t* b, Legacy& o) {
  o.d = f16(b);
  o.m = f16(b + 2);
  const uint32_t qh = u32(b + 4);
  for (int j = 0; j < 16; ++j) {
    o.w[j] = (b[8 + j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
    o.w[j + 16] = (b[8 + j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
  }
}
void decode_q8_0(const uint8_t* b, Legacy& o) {
  o.d = f16(b);
  for (int j = 0; j < kQK; ++j) o.w[j] = static_cast<int8_t>(b[2 + j]);
}

template <void (*Decode)(const uint8_t*, Legacy&), size_t kBytes, bool kMin>
float dot_legacy(const uint8_t* w, const uint8_t* a, int64_t n) {
  // Activations: Q8_1 (d, s, qs) for the min types, else Q8_0 (d, qs).
  constexpr size_t kActBytes = kMin ? kQ8_1Bytes : kQ8_0Bytes;
  constexpr size_t kActQs = kMin ? 4 : 2;
  float acc = 0.0f;
  Legacy blk;
  const int64_t nb = n / kQK;
  for (int64_t b = 0; b < nb; ++b) {
    Decode(w + b * kBytes, blk);
    const uint8_t* ab = a + b * kActBytes;
    const float dd = blk.d * f16(ab);
    int isum = 0;
    for (int k = 0; k < kQK; ++k) isum += blk.w[k] * static_cast<int8_t>(ab[kActQs + k]);
    acc = std::fma(dd, static_cast<float>(isum), acc);
    if constexpr (kMin) acc = std::fma(blk.m, f16(ab + 2), acc);
  }
  return acc;
}

// ---------------------------------------------------------------------------
// K-quant super-blocks -> integer values, a scale and a min per 16 elements
// (32-element sub-blocks repeat theirs), super-block scale d and min scale dmin.

struct KQuant {
  int w[kQKK];
  int scale[16];
  int min[16] = {};
  float d = 0.0f;
  float dmin = 0.0f;
};

// Q4_K / Q5_K: 6-bit (scale, min) pair j of 8, see ggml_types.cpp.
void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q2_K (84 B): scales[16], qs[64], d, dmin. Element e: 2 bits at shift
// 2 * ((e % 128) / 32) of qs[32 * (e / 128) + e % 32].
void decode_q2_k(const uint8_t* b, KQuant& o) {
  for (int s = 0; s < 16; ++s) {
    o.scale[s] = b[s] & 0x0F;
    o.min[s] = b[s] >> 4;
  }
  for (int e = 0; e < kQKK; ++e)
    o.w[e] = (b[16 + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
  o.d = f16(b + 80);
  o.dmin = f16(b + 82);
}
// Q3_K (110 B): hmask[32], qs[64] (low 2 bits, as Q2_K), scales[12], d.
// Value = low2 - (high bit of hmask[e % 32] at e / 32 ? 0 : 4).
void decode_q3_k(const uint8_t* b, KQuant& o) {
  const uint8_t* s = b + 96;
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (s[j] & 0x0F) : (s[j - 8] >> 4);
    const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    o.scale[j] = (low | (high << 4)) - 32;
  }
  for (int e = 0; e < kQKK; ++e) {
    const int low2 = (b[32 + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
    o.w[e] = low2 - (((b[e % 32] >> (e / 32)) & 1) ? 0 : 4);
  }
  o.d = f16(b + 108);
}
// Q4_K / Q5_K: d, dmin, then the eight 6-bit (scale, min) pairs of the
// 32-element sub-blocks, each given to both of its 16-element halves.
KVBENCH_INLINE void decode_k4_scales(const uint8_t* b, KQuant& o) {
  o.d = f16(b);
  o.dmin = f16(b + 2);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    scale_min_k4(j, b + 4, &sc, &m);
    o.scale[2 * j] = o.scale[2 * j + 1] = sc;
    o.min[2 * j] = o.min[2 * j + 1] = m;
  }
}
// Q4_K (144 B): d, dmin, scales[12], qs[128]: byte 32c + l holds element
// 64c + l (low nibble) and 64c + 32 + l (high nibble).
void decode_q4_k(const uint8_t* b, KQuant& o) {
  decode_k4_scales(b, o);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      o.w[64 * c + l] = b[16 + 32 * c + l] & 0x0F;
      o.w[64 * c + 32 + l] = b[16 + 32 * c + l] >> 4;
    }
  }
}
// Q5_K (176 B): d, dmin, scales[12], qh[32], qs[128] (as Q4_K); the 5th bit of
// element 64c + l is bit 2c of qh[l], of 64c + 32 + l bit 2c + 1.
void decode_q5_k(const uint8_t* b, KQuant& o) {
  decode_k4_scales(b, o);
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      o.w[64 * c + l] = (ql[32 * c + l] & 0x0F) | (((qh[l] >> (2 * c)) & 1) << 4);
      o.w[64 * c + 32 + l] = (ql[32 * c + l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4);
    }
  }
}
// Q6_K (210 B): ql[128], qh[64], scales[16] (int8), d. Element 128h + 32i + l:
// low 4 bits from ql[64h + l + 32 * (i % 2)] (nibble i / 2), high 2 bits at
// shift 2i of qh[32h + l]; value - 32.
void decode_q6_k(const uint8_t* b, KQuant& o) {
  for (int s = 0; s < 16; ++s) o.scale[s] = static_cast<int8_t>(b[192 + s]);
  for (int e = 0; e < kQKK; ++e) {
    const int h = e / 128, i = (e % 128) / 32, l = e % 32;
    const uint8_t lq = b[64 * h + l + 32 * (i % 2)];
    const int low = (i / 2) ? (lq >> 4) : (lq & 0x0F);
    const int high = (b[128 + 32 * h + l] >> (2 * i)) & 3;
    o.w[e] = (low | (high << 4)) - 32;
  }
  o.d = f16(b + 208);
}

template <void (*Decode)(const uint8_t*, KQuant&), size_t kBytes, bool kMin>
float dot_kquant(const uint8_t* w, const uint8_t* a, int64_t n) {
  float acc = 0.0f, macc = 0.0f;
  KQuant blk;
  const int64_t nb = n / kQKK;
  for (int64_t b = 0; b < nb; ++b) {
    Decode(w + b * kBytes, blk);
    const uint8_t* ab = a + b * kQ8_KBytes;
    const float da = std::bit_cast<float>(u32(ab));
    int32_t isum = 0;
    for (int k = 0; k < kQKK; ++k)
      isum += blk.scale[k / 16] * blk.w[k] * static_cast<int8_t>(ab[4 + k]);
    acc = std::fma(blk.d * da, static_cast<float>(isum), acc);
    if constexpr (kMin) {
      int32_t msum = 0;
      for (int s = 0; s < 16; ++s) msum += blk.min[s] * static_cast<int16_t>(u16(ab + 260 + 2 * s));
      macc = std::fma(blk.dmin * da, static_cast<float>(msum), macc);
    }
  }
  if constexpr (kMin) return acc - macc;
  return acc;
}

// ---------------------------------------------------------------------------
// Plain weights with f32 activations.

float load_f32(const uint8_t* p, int64_t i) { return std::bit_cast<float>(u32(p + 4 * i)); }
float load_f16(const uint8_t* p, int64_t i) { return fp16_to_fp32(u16(p + 2 * i)); }
float load_bf16(const uint8_t* p, int64_t i) { return bf16_to_fp32(u16(p + 2 * i)); }

template <float (*Load)(const uint8_t*, int64_t)>
float dot_plain(const uint8_t* w, const uint8_t* a, int64_t n) {
  float acc[16] = {};
  for (int64_t k = 0; k < n; ++k) acc[k % 16] = std::fma(Load(w, k), load_f32(a, k), acc[k % 16]);
  return hsum16(acc);
}

// ---------------------------------------------------------------------------

template <GgmlType kType>
void quantize(const float* x, uint8_t* dst, int64_t n) {
  quantize_row(kType, x, dst, n);
}

Kernels make_scalar() {
  Kernels k;
  k.quantize_q8_0 = quantize<GgmlType::Q8_0>;
  k.quantize_q8_1 = quantize<GgmlType::Q8_1>;
  k.quantize_q8_k = quantize<GgmlType::Q8_K>;
  k.tile[kQ4_0] = row_tile<dot_legacy<decode_q4_0, 18, false>>;
  k.tile[kQ4_1] = row_tile<dot_legacy<decode_q4_1, 20, true>>;
  k.tile[kQ5_0] = row_tile<dot_legacy<decode_q5_0, 22, false>>;
  k.tile[kQ5_1] = row_tile<dot_legacy<decode_q5_1, 24, true>>;
  k.tile[kQ8_0] = row_tile<dot_legacy<decode_q8_0, 34, false>>;
  k.tile[kQ2_K] = row_tile<dot_kquant<decode_q2_k, 84, true>>;
  k.tile[kQ3_K] = row_tile<dot_kquant<decode_q3_k, 110, false>>;
  k.tile[kQ4_K] = row_tile<dot_kquant<decode_q4_k, 144, true>>;
  k.tile[kQ5_K] = row_tile<dot_kquant<decode_q5_k, 176, true>>;
  k.tile[kQ6_K] = row_tile<dot_kquant<decode_q6_k, 210, false>>;
  k.tile[kF32] = row_tile<dot_plain<load_f32>>;
  k.tile[kF16] = row_tile<dot_plain<load_f16>>;
  k.tile[kBF16] = row_tile<dot_plain<load_bf16>>;
  return k;
}

}  // namespace

const Kernels* scalar_kernels() {
  static const Kernels k = make_scalar();
  return &k;
}

}  // namespace kvbench::qdot
