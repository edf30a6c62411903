// The attention kernels' algorithm, written once over a small vector
// interface and instantiated by each instruction-set path (attention_scalar.cpp
// with one-float "vectors" and std::exp2 is the reference; attention_avx2.cpp
// and attention_avx512.cpp include this file under their target attribute).
// Everything here has internal linkage, so each path's instantiations stay in
// its own object file and never mix with another path's.
//
// The vector interface `I`:
//   V, W (floats per V), kRegs (vector registers), kGemmCols (V per GEMM row)
//   zero(), set1(f), load(const float*), store(float*, V), load_f16(const uint16_t*),
//   load_bf16(const uint16_t*), load_i8(const int8_t*): W int8 as floats,
//   load_i32(const int32_t*): W int32 as floats,
//   load_u4(const uint8_t* codes, d): 4-bit codes [d, d + W) as floats (element
//     2i in the low nibble of byte i),
//   load_u4_pair(const uint8_t* codes, d, V& lo, V& hi) (paths without
//     lookup_u4_pair, below): the 2W 4-bit codes
//     [d, d + 2W) without interleaving them: lo = the low nibbles of bytes
//     [d / 2, d / 2 + W) (elements d, d + 2, ...), hi = the high nibbles
//     (elements d + 1, d + 3, ...),
//   load_u2(const uint8_t* codes, d): 2-bit codes [d, d + W) as floats (element
//     e in bits 2 * (e % 4) of byte e / 4),
//   optional: u2_table(min, step) -> V and lookup_u2(codes, d, table): a Q2
//     group's four values min + c x step (multiply, then add) as a table, and
//     the codes [d, d + W) looked up in it: the same values as load_u2's
//     multiplied and added, fewer instructions (the x86 paths' vpermps),
//   optional, W = 16: u4_table(min, step) -> V and lookup_u4_pair(codes, d,
//     table, lo, hi): a Q4 group's sixteen values as a table, and load_u4_pair's
//     codes looked up in it (AVX-512's vpermps; the same values),
//   halves(const uint16_t* h, n, float* out): n f16 values as floats (reads
//     only h[0, n); may write out[0, max(n, 16)): callers give kMaxRowParams),
//   fmadd(a, b, c) = a * b + c, mul, add, sub, max
//   hsum(V), hmax(V), hsum4(const V[4], float out[4])
//   exp2(V): 2^x, exactly 0 for x < -126 (so masked -inf scores weigh 0)
// The x86 paths take V, W and zero() .. max from their vector basics
// (simd_avx2.h, simd_avx512.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "model/ops/attention_kernels.h"
#include "model/ops/with_count.h"

namespace kvbench::attn {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// K/V rows one key tile ahead are prefetched into L2 (locality 2, prefetcht1),
// not L1: L1 tracks too few misses to stream K/V from memory. Measured with
// BM_DecodeAttention30Layers (4096 keys x 30 layers, Zen 4), median of 3, L1
// -> L2: f32 1 thread 9.5 -> 17.7 GB/s, f16 1 thread 9.8 -> 13.8, f32 2
// threads 14.9 -> 21.3, f16 2 threads 16.7 -> 16.2 (noise); two tiles ahead
// were no better.
constexpr int kPrefetchLocality = 2;

// A row prepared for reading: its address and, for Q8 / Q4 / Q2, its
// per-group parameters converted from f16 once per row (not once per vector)
// and log2 of its group (Rows::group_shift). K2 reads its per-channel
// parameters as vectors (kp).
struct RowRef {
  const uint8_t* row = nullptr;
  const uint16_t* kp = nullptr;
  const float* prm = nullptr;  // Q8: scale[g]; Q4 / Q2: (min, step)[g]
  int shift = 0;               // element d is in group d >> shift
};

template <class I, KvElement E>
inline RowRef prepare_row(const uint8_t* row, int hd, int shift, const uint16_t* kp, float* prm) {
  RowRef r{row, kp, prm, shift};
  if constexpr (E == KvElement::Q8)
    I::halves(reinterpret_cast<const uint16_t*>(row + hd), hd >> shift, prm);
  else if constexpr (E == KvElement::Q4)
    I::halves(reinterpret_cast<const uint16_t*>(row + hd / 2), 2 * (hd >> shift), prm);
  else if constexpr (E == KvElement::Q2)
    I::halves(reinterpret_cast<const uint16_t*>(row + hd / 4), 2 * (hd >> shift), prm);
  return r;
}

// Whether the path reads Q2 codes through a table (u2_table, lookup_u2).
template <class I>
constexpr bool has_u2_table() {
  return requires(const uint8_t* c) { I::lookup_u2(c, 0, I::u2_table(0.0f, 0.0f)); };
}

// The table of the Q2 group holding element d (I::u2_table).
template <class I>
inline typename I::V q2_table(const RowRef& r, int d) {
  const float* mp = r.prm + 2 * (d >> r.shift);
  return I::u2_table(mp[0], mp[1]);
}

// W elements [d, d + W) of a prepared row, as f32. Quantized rows are
// dequantized exactly as the codecs decode (policies/codec.cpp): code * scale;
// min + code * step (a multiply, then an add: no fused rounding). W divides
// the group, so the W elements share one parameter group.
template <class I, KvElement E>
inline typename I::V load_row(const RowRef& r, int d, int hd) {
  const uint8_t* row = r.row;
  if constexpr (E == KvElement::F32) {
    return I::load(reinterpret_cast<const float*>(row) + d);
  } else if constexpr (E == KvElement::F16) {
    return I::load_f16(reinterpret_cast<const uint16_t*>(row) + d);
  } else if constexpr (E == KvElement::BF16) {
    return I::load_bf16(reinterpret_cast<const uint16_t*>(row) + d);
  } else if constexpr (E == KvElement::Q8) {
    return I::mul(I::load_i8(reinterpret_cast<const int8_t*>(row) + d),
                  I::set1(r.prm[d >> r.shift]));
  } else if constexpr (E == KvElement::Q4) {
    const float* mp = r.prm + 2 * (d >> r.shift);
    return I::add(I::mul(I::load_u4(row, d), I::set1(mp[1])), I::set1(mp[0]));
  } else if constexpr (E == KvElement::Q2) {
    if constexpr (has_u2_table<I>()) return I::lookup_u2(row, d, q2_table<I>(r, d));
    const float* mp = r.prm + 2 * (d >> r.shift);
    return I::add(I::mul(I::load_u2(row, d), I::set1(mp[1])), I::set1(mp[0]));
  } else {  // K2: per-channel min and step of the row's block
    return I::add(I::load_f16(r.kp + d), I::mul(I::load_u2(row, d), I::load_f16(r.kp + hd + d)));
  }
}

// Int4 rows read in "pair order": 2W elements [d, d + 2W) at a time as two
// vectors, the even elements then the odd ones (load_u4_pair), which skips
// the nibble interleave. A dot product is the same sum when the query is
// permuted the same way (reorder_pairs); a weighted V sum accumulates in pair
// order and is put back in element order once (reorder_pairs too). Needs every
// 2W-element span inside one parameter group: group % 2W == 0.
template <class I>
inline bool pair_order(KvElement e, int group) {
  return e == KvElement::Q4 && group % (2 * I::W) == 0;
}

// Whether the path reads Q4 code pairs through a table (u4_table,
// lookup_u4_pair): sixteen values, one vector of 16 lanes.
template <class I>
constexpr bool has_u4_table() {
  return requires(const uint8_t* c, typename I::V& x) {
    I::lookup_u4_pair(c, 0, I::u4_table(0.0f, 0.0f), x, x);
  };
}

template <class I>
inline void load_q4_pair(const RowRef& r, int d, typename I::V& lo, typename I::V& hi) {
  const float* mp = r.prm + 2 * (d >> r.shift);
  if constexpr (has_u4_table<I>()) {
    I::lookup_u4_pair(r.row, d, I::u4_table(mp[0], mp[1]), lo, hi);
  } else {
    const typename I::V step = I::set1(mp[1]), mn = I::set1(mp[0]);
    I::load_u4_pair(r.row, d, lo, hi);
    lo = I::add(I::mul(lo, step), mn);  // as load_row: multiply, then add
    hi = I::add(I::mul(hi, step), mn);
  }
}

// x [rows][hd] reordered in place between element order and pair order:
// kToPairs, element -> pair order (a query); else pair -> element order (a
// V sum). Element 2i + odd of each 2W span sits at odd * W + i in pair order.
template <class I, bool kToPairs>
inline void reorder_pairs(float* x, int rows, int hd) {
  constexpr int W = I::W;
  float t[2 * W];
  for (int r = 0; r < rows; ++r)
    for (int d = 0; d < hd; d += 2 * W) {
      float* b = x + r * hd + d;
      for (int i = 0; i < W; ++i)
        for (int odd = 0; odd < 2; ++odd) {
          const int e = 2 * i + odd, p = odd * W + i;
          t[kToPairs ? p : e] = b[kToPairs ? e : p];
        }
      std::copy(t, t + 2 * W, b);
    }
}

// Row j + ahead of r into L2 when it exists (contiguous rows: by address,
// prefetches never fault).
// `bytes`: the row's size (kv_row_bytes), for callers that hoist it.
inline void prefetch_row_bytes(const Rows& r, int64_t j, int64_t ahead, int64_t bytes) {
  const uint8_t* p;
  if (r.contiguous())
    p = r.data + (j + ahead) * r.stride;
  else if (j + ahead < r.n)
    p = r.row(j + ahead);
  else
    return;
  for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 0, kPrefetchLocality);
}

template <KvElement E>
inline void prefetch_row(const Rows& r, int64_t j, int64_t ahead, int hd) {
  prefetch_row_bytes(r, j, ahead, kv_row_bytes(E, hd, r.group > 0 ? r.group : hd));
}

// Calls f.template operator()<E>() with the row type as a template argument:
// every type (keys), or every type a V row can have (values: not K2).
template <class F>
inline void with_value_element(KvElement e, F&& f) {
  switch (e) {
    case KvElement::F32:
      f.template operator()<KvElement::F32>();
      return;
    case KvElement::F16:
      f.template operator()<KvElement::F16>();
      return;
    case KvElement::BF16:
      f.template operator()<KvElement::BF16>();
      return;
    case KvElement::Q8:
      f.template operator()<KvElement::Q8>();
      return;
    case KvElement::Q4:
      f.template operator()<KvElement::Q4>();
      return;
    case KvElement::Q2:
      f.template operator()<KvElement::Q2>();
      return;
    case KvElement::K2:
      return;  // never a value type (kernels_read)
  }
}
template <class F>
inline void with_element(KvElement e, F&& f) {
  if (e == KvElement::K2)
    f.template operator()<KvElement::K2>();
  else
    with_value_element(e, f);
}

// Row j's K2 block parameters (null for other types), addressed like its row.
inline const uint16_t* params_of(const Rows& r, int64_t j) {
  return r.params ? r.params[r.index ? r.index[j] : j] : nullptr;
}

}  // namespace
}  // namespace kvbench::attn

#include "model/ops/attention_q8.h"

namespace kvbench::attn {
namespace {

// Keys per pass of the dot-product kernel with GC heads: GC x KB accumulators,
// KB key vectors and one query vector should fit in the registers.
template <class I, int GC>
constexpr int keys_per_pass() {
  for (int kb = 4; kb > 1; --kb)
    if (GC * kb + kb + 1 <= I::kRegs) return kb;
  return 1;
}

// out[g * stride + kb] = qs[g] . k_{j + kb} for g < GC, kb < KB. kPairs:
// int4 keys read in pair order against a query in pair order.
template <class I, KvElement KE, int GC, int KB, bool kPairs = false>
inline void dot_keys(const float* qs, int hd, const Rows& k, int32_t j, float* out,
                     int64_t stride) {
  using V = typename I::V;
  V acc[GC][KB];
  for (int g = 0; g < GC; ++g)
    for (int kb = 0; kb < KB; ++kb) acc[g][kb] = I::zero();
  RowRef rows[KB];
  float prm[KE == KvElement::Q8 || KE == KvElement::Q4 || KE == KvElement::Q2 ? KB : 1]
           [kMaxRowParams];
  for (int kb = 0; kb < KB; ++kb)
    rows[kb] = prepare_row<I, KE>(k.row(j + kb), hd, k.group_shift, params_of(k, j + kb),
                                  prm[std::min(kb, int(std::size(prm)) - 1)]);
  // Rows one key tile ahead are on their way while these are computed.
  for (int kb = 0; kb < KB; ++kb) prefetch_row<KE>(k, j + kb, kKeyTile, hd);
  if constexpr (kPairs) {
    for (int d = 0; d < hd; d += 2 * I::W) {
      V lo[KB], hi[KB];
      for (int kb = 0; kb < KB; ++kb) load_q4_pair<I>(rows[kb], d, lo[kb], hi[kb]);
      for (int g = 0; g < GC; ++g) {
        const V ql = I::load(qs + g * hd + d), qh = I::load(qs + g * hd + d + I::W);
        for (int kb = 0; kb < KB; ++kb)
          acc[g][kb] = I::fmadd(qh, hi[kb], I::fmadd(ql, lo[kb], acc[g][kb]));
      }
    }
  } else {
    for (int d = 0; d < hd; d += I::W) {
      V kv[KB];
      for (int kb = 0; kb < KB; ++kb) kv[kb] = load_row<I, KE>(rows[kb], d, hd);
      for (int g = 0; g < GC; ++g) {
        const V qv = I::load(qs + g * hd + d);
        for (int kb = 0; kb < KB; ++kb) acc[g][kb] = I::fmadd(qv, kv[kb], acc[g][kb]);
      }
    }
  }
  for (int g = 0; g < GC; ++g) {
    if constexpr (KB == 4) {
      I::hsum4(acc[g], out + g * stride);
    } else if constexpr (KB > 1) {  // padded to four: one batched reduction
      V a4[4];
      float s4[4];
      for (int kb = 0; kb < 4; ++kb) a4[kb] = kb < KB ? acc[g][kb] : I::zero();
      I::hsum4(a4, s4);
      for (int kb = 0; kb < KB; ++kb) out[g * stride + kb] = s4[kb];
    } else {
      out[g * stride] = I::hsum(acc[g][0]);
    }
  }
}

template <class I, KvElement KE, int GC, bool kPairs>
void dot_range(const float* qs, int hd, const Rows& k, int32_t begin, int32_t end, float* out,
               int64_t stride) {
  constexpr int KB = keys_per_pass<I, GC>();
  int32_t j = begin;
  for (; j + KB <= end; j += KB)
    dot_keys<I, KE, GC, KB, kPairs>(qs, hd, k, j, out + (j - begin), stride);
  for (; j < end; ++j) dot_keys<I, KE, GC, 1, kPairs>(qs, hd, k, j, out + (j - begin), stride);
}

// Scores of `group` heads: heads go in passes of up to 4, each pass reading
// every K row once for all of its heads (GQA: one load, several queries).
// kPairs: int4 keys in pair order, qs already in pair order (reorder_pairs).
template <class I, KvElement KE, bool kPairs = false>
void dot_heads(const float* qs, int group, int hd, const Rows& k, int32_t begin, int32_t end,
               float* out, int64_t stride) {
  for (int g0 = 0; g0 < group; g0 += 4) {
    const float* q = qs + g0 * hd;
    float* o = out + g0 * stride;
    with_count<4>(group - g0,
                  [&]<int G>() { dot_range<I, KE, G, kPairs>(q, hd, k, begin, end, o, stride); });
  }
}

// KIVI keys (K2): a block of tokens shares per-channel (min, step), so
// q . (min + code * step) = (q * step) . code + q . min. A block's query is
// multiplied by its steps once (qk [group][hd], qmin [group]); each key then
// costs one dot product with its codes.
template <class I>
void k2_block_query(const float* qs, int group, int hd, const uint16_t* kp, float* qk,
                    float* qmin) {
  using V = typename I::V;
  for (int g = 0; g < group; ++g) {
    V m = I::zero();
    for (int d = 0; d < hd; d += I::W) {
      const V q = I::load(qs + g * hd + d);
      I::store(qk + g * hd + d, I::mul(q, I::load_f16(kp + hd + d)));
      m = I::fmadd(q, I::load_f16(kp + d), m);
    }
    qmin[g] = I::hsum(m);
  }
}

// out[g * stride + kb] = qk[g] . codes_{j + kb} + qmin[g] for g < GC, kb < KB.
template <class I, int GC, int KB>
inline void dot_k2_keys(const float* qk, const float* qmin, int hd, const Rows& k, int32_t j,
                        float* out, int64_t stride) {
  using V = typename I::V;
  V acc[GC][KB];
  for (int g = 0; g < GC; ++g)
    for (int kb = 0; kb < KB; ++kb) acc[g][kb] = I::zero();
  const uint8_t* rows[KB];
  for (int kb = 0; kb < KB; ++kb) rows[kb] = k.row(j + kb);
  for (int kb = 0; kb < KB; ++kb) prefetch_row<KvElement::K2>(k, j + kb, kKeyTile, hd);
  for (int d = 0; d < hd; d += I::W) {
    V c[KB];
    for (int kb = 0; kb < KB; ++kb) c[kb] = I::load_u2(rows[kb], d);
    for (int g = 0; g < GC; ++g) {
      const V qv = I::load(qk + g * hd + d);
      for (int kb = 0; kb < KB; ++kb) acc[g][kb] = I::fmadd(qv, c[kb], acc[g][kb]);
    }
  }
  for (int g = 0; g < GC; ++g) {
    float s4[4];
    V a4[4];
    for (int kb = 0; kb < 4; ++kb) a4[kb] = kb < KB ? acc[g][kb] : I::zero();
    I::hsum4(a4, s4);
    for (int kb = 0; kb < KB; ++kb) out[g * stride + kb] = s4[kb] + qmin[g];
  }
}

template <class I, int GC>
void dot_k2_range(const float* qk, const float* qmin, int hd, const Rows& k, int32_t begin,
                  int32_t end, float* out, int64_t stride) {
  constexpr int KB = keys_per_pass<I, GC>();
  int32_t j = begin;
  for (; j + KB <= end; j += KB)
    dot_k2_keys<I, GC, KB>(qk, qmin, hd, k, j, out + (j - begin), stride);
  for (; j < end; ++j) dot_k2_keys<I, GC, 1>(qk, qmin, hd, k, j, out + (j - begin), stride);
}

// K2 keys' block parameters ahead of the run of keys [j, e) that shares one
// block, as rows are prefetched: the parameters of the block one key tile
// ahead (4 x hd bytes: min and step per channel, f16) and, two tiles ahead,
// the pointers to the blocks of as many keys as the run (which the
// parameter prefetch and the scan for runs read later). In perf of KIVI-2
// decode at depth 4096 (AMD EPYC) 13% of the key scores' samples sat on the
// multiply by a block's step, just loaded, and 9% on the pointer loads.
inline void prefetch_k2_params(const Rows& k, int64_t j, int64_t e, int hd) {
  if (!k.index) {
    const int64_t b = std::min<int64_t>(j + 2 * kKeyTile, k.n);
    const int64_t end = std::min<int64_t>(e + 2 * kKeyTile, k.n);
    const auto* p = reinterpret_cast<const uint8_t*>(k.params);
    constexpr int64_t kPtr = sizeof(*k.params);
    for (int64_t off = b * kPtr; off < end * kPtr; off += 64)
      __builtin_prefetch(p + off, 0, kPrefetchLocality);
  }
  if (j + kKeyTile < k.n) {
    const auto* b = reinterpret_cast<const uint8_t*>(params_of(k, j + kKeyTile));
    for (int off = 0; off < 4 * hd; off += 64) __builtin_prefetch(b + off, 0, kPrefetchLocality);
  }
}

// Scores of `group` heads over K2 keys [begin, end): runs of keys that share
// a block (one params pointer) each use that block's query; *cached is the
// block qk / qmin hold (kept across calls of one decode block).
template <class I>
void dot_k2_heads(const float* qs, int group, int hd, const Rows& k, int32_t begin, int32_t end,
                  float* out, int64_t stride, float* qk, float* qmin, const uint16_t** cached) {
  for (int32_t j = begin; j < end;) {
    const uint16_t* kp = params_of(k, j);
    int32_t e = j + 1;
    if (!k.index) {  // the run's end found four pointers a step: one branch, not four
      const uint16_t* const* p = k.params;
      while (e + 4 <= end &&
             ((p[e] == kp) & (p[e + 1] == kp) & (p[e + 2] == kp) & (p[e + 3] == kp)))
        e += 4;
    }
    while (e < end && params_of(k, e) == kp) ++e;
    prefetch_k2_params(k, j, e, hd);
    if (kp != *cached) {
      k2_block_query<I>(qs, group, hd, kp, qk, qmin);
      *cached = kp;
    }
    for (int g0 = 0; g0 < group; g0 += 4) {
      const float* q = qk + g0 * hd;
      const float* qm = qmin + g0;
      float* o = out + g0 * stride + (j - begin);
      with_count<4>(group - g0,
                    [&]<int G>() { dot_k2_range<I, G>(q, qm, hd, k, j, e, o, stride); });
    }
    j = e;
  }
}

template <class I>
void scores_kernel(const float* qs, int group, int hd, const Rows& k, int32_t begin, int32_t end,
                   float* out, int64_t stride) {
  with_element(k.type,
               [&]<KvElement E>() { dot_heads<I, E>(qs, group, hd, k, begin, end, out, stride); });
}

// Weighted V sum for RB rows: acc[r][d] += sum_{j < nk} p[r * kKeyTile + j] * v_{begin + j}[d].
// DC vectors of d at a time keep RB x DC independent accumulator chains.
template <class I, int RB>
constexpr int d_vectors_per_pass() {
  for (int dc = 4; dc > 1; --dc)
    if (RB * dc + dc + 1 <= I::kRegs) return dc;
  return 1;
}

// kPairs: int4 rows in pair order, acc in pair order too (DC even).
template <class I, KvElement VE, int RB, int DC, bool kPrefetch, bool kPairs = false>
inline void pv_block(const float* p, const Rows& v, int32_t begin, int32_t nk, int hd, int d,
                     float* acc) {
  using V = typename I::V;
  V a[RB][DC];
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < DC; ++c) a[r][c] = I::load(acc + r * hd + d + c * I::W);
  float prm[VE == KvElement::Q8 || VE == KvElement::Q4 || VE == KvElement::Q2 ? kMaxRowParams : 1];
  for (int32_t j = 0; j < nk; ++j) {
    const RowRef row = prepare_row<I, VE>(v.row(begin + j), hd, v.group_shift, nullptr, prm);
    if (kPrefetch && d == 0)  // the first pass over these rows fetches the next tile's
      prefetch_row<VE>(v, begin + j, kKeyTile, hd);
    V vv[DC];
    if constexpr (kPairs) {
      static_assert(DC % 2 == 0);
      for (int c = 0; c < DC; c += 2) load_q4_pair<I>(row, d + c * I::W, vv[c], vv[c + 1]);
    } else if constexpr (VE == KvElement::Q2 && has_u2_table<I>()) {
      // One table per parameter group, shared by the group's vectors (two
      // per group of 32 at W = 16: KIVI's values).
      typename I::V table = q2_table<I>(row, d);
      for (int c = 0; c < DC; ++c) {
        const int e = d + c * I::W;
        if (c > 0 && (e >> row.shift) != ((e - I::W) >> row.shift)) table = q2_table<I>(row, e);
        vv[c] = I::lookup_u2(row.row, e, table);
      }
    } else {
      for (int c = 0; c < DC; ++c) vv[c] = load_row<I, VE>(row, d + c * I::W, hd);
    }
    for (int r = 0; r < RB; ++r) {
      const V w = I::set1(p[r * kKeyTile + j]);
      for (int c = 0; c < DC; ++c) a[r][c] = I::fmadd(w, vv[c], a[r][c]);
    }
  }
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < DC; ++c) I::store(acc + r * hd + d + c * I::W, a[r][c]);
}

template <class I, KvElement VE, int RB, bool kPrefetch, bool kPairs>
void pv_rows_fixed(const float* p, const Rows& v, int32_t begin, int32_t nk, int hd, float* acc) {
  if constexpr (kPairs) {  // pairs of vectors: 2W divides hd (pair_order)
    constexpr int DC = d_vectors_per_pass<I, RB>() & ~1;
    static_assert(DC >= 2);
    int d = 0;
    for (; d + DC * I::W <= hd; d += DC * I::W)
      pv_block<I, VE, RB, DC, kPrefetch, true>(p, v, begin, nk, hd, d, acc);
    for (; d < hd; d += 2 * I::W)
      pv_block<I, VE, RB, 2, kPrefetch, true>(p, v, begin, nk, hd, d, acc);
  } else {
    constexpr int DC = d_vectors_per_pass<I, RB>();
    int d = 0;
    for (; d + DC * I::W <= hd; d += DC * I::W)
      pv_block<I, VE, RB, DC, kPrefetch>(p, v, begin, nk, hd, d, acc);
    for (; d < hd; d += I::W) pv_block<I, VE, RB, 1, kPrefetch>(p, v, begin, nk, hd, d, acc);
  }
}

// All rows in passes of up to 4 (rows are the heads of a group in decode,
// query x head pairs in prefill). kPrefetch: stream the next key tile's V
// rows in (decode, where V comes from memory once). kPairs: int4 rows and acc
// in pair order.
template <class I, KvElement VE, bool kPrefetch = false, bool kPairs = false>
void pv_rows(const float* p, int rows, const Rows& v, int32_t begin, int32_t nk, int hd,
             float* acc) {
  for (int r0 = 0; r0 < rows; r0 += 4) {
    const float* pr = p + r0 * kKeyTile;
    float* ar = acc + r0 * hd;
    with_count<4>(rows - r0, [&]<int R>() {
      pv_rows_fixed<I, VE, R, kPrefetch, kPairs>(pr, v, begin, nk, hd, ar);
    });
  }
}

// One online-softmax step over a [rows][kKeyTile] tile of scores (masked and
// padded entries -inf): updates the running max m and sum l of each row,
// rescales its accumulator, and turns the scores into weights exp2(s - m).
template <class I>
void softmax_step(float* s, int rows, float* m, float* l, float* acc, int hd) {
  using V = typename I::V;
  for (int r = 0; r < rows; ++r) {
    float* sr = s + r * kKeyTile;
    V mx = I::set1(kNegInf);
    for (int c = 0; c < kKeyTile; c += I::W) mx = I::max(mx, I::load(sr + c));
    const float m_new = std::max(m[r], I::hmax(mx));
    if (m_new == kNegInf) {  // nothing visible yet: all weights 0
      for (int c = 0; c < kKeyTile; c += I::W) I::store(sr + c, I::zero());
      continue;
    }
    const V mv = I::set1(m_new);
    V sum = I::zero();
    for (int c = 0; c < kKeyTile; c += I::W) {
      const V w = I::exp2(I::sub(I::load(sr + c), mv));
      I::store(sr + c, w);
      sum = I::add(sum, w);
    }
    // exp2(0) = 1 exactly: no library call while the running max holds
    // (most tiles of a long prefill).
    const float alpha = m[r] == m_new ? 1.0f : m[r] == kNegInf ? 0.0f : std::exp2(m[r] - m_new);
    l[r] = l[r] * alpha + I::hsum(sum);
    m[r] = m_new;
    if (alpha != 1.0f) {
      const V av = I::set1(alpha);
      float* ar = acc + r * hd;
      for (int d = 0; d < hd; d += I::W) I::store(ar + d, I::mul(I::load(ar + d), av));
    }
  }
}

template <class I>
void scale_rows(const float* src, int rows, int hd, float scale, float* dst) {
  const typename I::V sv = I::set1(scale);
  for (int i = 0; i < rows * hd; i += I::W) I::store(dst + i, I::mul(I::load(src + i), sv));
}

// The body of decode_block_t with the head's rows and head_dim as arguments,
// so that a caller can pass constants (decode_block_t's common shapes).
template <class I, KvElement KE, KvElement VE, bool kKeyPairs, bool kValuePairs>
[[gnu::always_inline]] inline void decode_block_body(const DecodeBlock& a, const Rows& k,
                                                     const Rows& v, int hd, const DecodeWork& w,
                                                     float* m, float* l, float* acc) {
  const int G = a.group;
  scale_rows<I>(a.q, G, hd, a.scale, w.qs);
  // Int8-query scores (attention_q8.h): the query is quantized from its
  // element order, once per thread and KV head of a decode call (q8_tag)
  // and per key group and type (pieces of one head may differ); K2 keys
  // quantize theirs per block of tokens (k2q8_scores), so they clear the
  // tag: their codes are no other keys' query.
  Q8Work q8w;
  bool q8 = false;
  if constexpr (q8_key(KE) || KE == KvElement::K2) {
    if (a.q8) {
      const auto base = (reinterpret_cast<uintptr_t>(w.q8) + 63) & ~uintptr_t{63};
      const int block = KE == KvElement::K2 ? q8_k2_block(hd) : 1 << k.group_shift;
      q8_carve(reinterpret_cast<void*>(base), G, hd, block, &q8w);
      if constexpr (KE == KvElement::K2) {
        *q8w.tag = 0;
      } else if (a.q8_tag == 0 || *q8w.tag != a.q8_tag || *q8w.tag_block != block ||
                 *q8w.tag_keys != static_cast<int32_t>(KE)) {
        q8_prepare<I, KE>(w.qs, G, hd, q8w);
        *q8w.tag = a.q8_tag;
        *q8w.tag_block = block;
        *q8w.tag_keys = static_cast<int32_t>(KE);
      }
      q8 = true;
    }
  }
  if constexpr (kKeyPairs)
    if (!q8) reorder_pairs<I, true>(w.qs, G, hd);
  for (int g = 0; g < G; ++g) {
    m[g] = kNegInf;
    l[g] = 0.0f;
  }
  std::fill(acc, acc + G * hd, 0.0f);
  const uint16_t* k2_block = nullptr;  // the K2 block w.qk (or q8w) holds the query of
  for (int32_t j0 = a.begin; j0 < a.end; j0 += kKeyTile) {
    const int32_t nk = std::min<int32_t>(kKeyTile, a.end - j0);
    // A sliding-window layer's full cache holds keys long out of its window:
    // a tile with no visible key weighs 0 everywhere, so it is skipped (the
    // same bits: its weights would all be exp2(-inf) = 0, leaving m, l and acc
    // as they were).
    if (a.window > 0 && std::none_of(a.pos + j0, a.pos + j0 + nk,
                                     [&](int32_t p) { return visible(p, a.qpos, a.window); })) {
      if (a.scores)
        for (int g = 0; g < G; ++g)
          std::fill(a.scores + g * a.scores_stride + j0, a.scores + g * a.scores_stride + j0 + nk,
                    kNegInf);
      continue;
    }
    if constexpr (KE == KvElement::K2) {
      if (q8)
        k2q8_scores<I>(w.qs, G, hd, k, j0, nk, q8w, w.s, &k2_block);
      else
        dot_k2_heads<I>(w.qs, G, hd, k, j0, j0 + nk, w.s, kKeyTile, w.qk, w.qk + G * hd, &k2_block);
    } else if (q8)
      q8_scores<I, KE>(k, G, hd, j0, nk, q8w, w.s);
    else
      dot_heads<I, KE, kKeyPairs>(w.qs, G, hd, k, j0, j0 + nk, w.s, kKeyTile);
    if (a.cap > 0.0f)
      for (int g = 0; g < G; ++g) soft_cap_scores(w.s + g * kKeyTile, nk, a.cap);
    for (int32_t j = 0; j < nk; ++j)
      if (!visible(a.pos[j0 + j], a.qpos, a.window))
        for (int g = 0; g < G; ++g) w.s[g * kKeyTile + j] = kNegInf;
    for (int g = 0; g < G; ++g) {
      std::fill(w.s + g * kKeyTile + nk, w.s + (g + 1) * kKeyTile, kNegInf);
      if (a.scores)
        std::memcpy(a.scores + g * a.scores_stride + j0, w.s + g * kKeyTile, nk * sizeof(float));
    }
    softmax_step<I>(w.s, G, m, l, acc, hd);
    pv_rows<I, VE, true, kValuePairs>(w.s, G, v, j0, nk, hd, acc);
  }
  if constexpr (kValuePairs) reorder_pairs<I, false>(acc, G, hd);
}

// Quantized rows of the shapes most models have (head_dim 64, 128 or 256,
// groups of 32: the storages' default) get their own copy of the body with
// these as constants: the compiler then unrolls each row's loops and keeps
// its parameters in registers (int8 14% and int4 23% less decode time,
// BM_DecodeAttentionStorage30Layers, Zen 4, 2026-11-29). The same
// operations in the same order as the general body.
template <class I, KvElement KE, KvElement VE, bool kKeyPairs, bool kValuePairs>
void decode_block_t(const DecodeBlock& a, const DecodeWork& w, float* m, float* l, float* acc) {
  constexpr bool kQuantized = KE == KvElement::Q8 || KE == KvElement::Q4 || KE == KvElement::Q2 ||
                              VE == KvElement::Q8 || VE == KvElement::Q4 || VE == KvElement::Q2;
  if constexpr (kQuantized) {
    constexpr int kShift = 5;  // groups of 32
    const bool shifts = (a.k.group == 0 || a.k.group_shift == kShift) &&
                        (a.v.group == 0 || a.v.group_shift == kShift);
    if (shifts) {
      Rows k = a.k, v = a.v;  // f32 rows never read their shift
      k.group_shift = v.group_shift = kShift;
      switch (a.head_dim) {
        case 64:
          return decode_block_body<I, KE, VE, kKeyPairs, kValuePairs>(a, k, v, 64, w, m, l, acc);
        case 128:
          return decode_block_body<I, KE, VE, kKeyPairs, kValuePairs>(a, k, v, 128, w, m, l, acc);
        case 256:
          return decode_block_body<I, KE, VE, kKeyPairs, kValuePairs>(a, k, v, 256, w, m, l, acc);
        default:
          break;
      }
    }
  }
  decode_block_body<I, KE, VE, kKeyPairs, kValuePairs>(a, a.k, a.v, a.head_dim, w, m, l, acc);
}

template <class I, KvElement KE, KvElement VE>
void decode_block_t(const DecodeBlock& a, const DecodeWork& w, float* m, float* l, float* acc) {
  if constexpr (KE == KvElement::Q4 && VE == KvElement::Q4) {
    // Int4 reads in pair order where the groups allow (pair_order); the
    // scores may be recorded (a.scores): they are the same numbers.
    if (pair_order<I>(KE, a.k.group) && pair_order<I>(VE, a.v.group))
      return decode_block_t<I, KE, VE, true, true>(a, w, m, l, acc);
  }
  decode_block_t<I, KE, VE, false, false>(a, w, m, l, acc);
}

// K and V of a piece share one element type (one codec holds both), except
// KIVI's pieces (kernels_read).
template <class I>
void decode_block_kernel(const DecodeBlock& a, const DecodeWork& w, float* m, float* l,
                         float* acc) {
  constexpr KvElement F32 = KvElement::F32, Q2 = KvElement::Q2, K2 = KvElement::K2;
  if (a.k.type == K2) {
    if (a.v.type == Q2)
      decode_block_t<I, K2, Q2>(a, w, m, l, acc);
    else
      decode_block_t<I, K2, F32>(a, w, m, l, acc);
  } else if (a.k.type == F32 && a.v.type == Q2) {
    decode_block_t<I, F32, Q2>(a, w, m, l, acc);
  } else {
    with_value_element(a.k.type, [&]<KvElement E>() { decode_block_t<I, E, E>(a, w, m, l, acc); });
  }
}

// The layout of a packed key tile, a policy of pack_keys_t:
// put_keys(kt, j, d, vals, n) stores elements [d, d + n) of key j,
// zero_columns(kt, hd, count) clears the columns past the tile's keys, and
// kRound rounds the keys to bfloat16 first (bf16 products: Bf16Emulated,
// Bf16Native). F32Keys is the f32 products' layout: transposed f32 rows,
// element d at row d.
struct F32Keys {
  static constexpr bool kRound = false;
  static void put_keys(float* kt, int32_t j, int d, const float* vals, int n) {
    for (int i = 0; i < n; ++i) kt[(d + i) * kKeyTile + j] = vals[i];
  }
  static void zero_columns(float* kt, int hd, int32_t count) {
    for (int d = 0; d < hd; ++d)
      std::fill(kt + d * kKeyTile + count, kt + (d + 1) * kKeyTile, 0.0f);
  }
};

template <class I, class P, KvElement KE>
void pack_keys_t(const Rows& k, int hd, int32_t begin, int32_t count, float* kt) {
  alignas(64) float tmp[64];
  static_assert(I::W <= 64);
  for (int32_t j = 0; j < count; ++j) {
    float prm[kMaxRowParams];
    const RowRef row =
        prepare_row<I, KE>(k.row(begin + j), hd, k.group_shift, params_of(k, begin + j), prm);
    for (int d = 0; d < hd; d += I::W) {
      const typename I::V v = load_row<I, KE>(row, d, hd);
      if constexpr (P::kRound)
        I::store(tmp, I::round_bf16(v));
      else
        I::store(tmp, v);
      P::put_keys(kt, j, d, tmp, I::W);
    }
  }
  P::zero_columns(kt, hd, count);
}

template <class I, class P>
void pack_keys_kernel(const Rows& k, int hd, int32_t begin, int32_t count, float* kt) {
  with_element(k.type, [&]<KvElement E>() { pack_keys_t<I, P, E>(k, hd, begin, count, kt); });
}

// Rows [j0, j0 + count) of r as f32 into out [count][hd].
template <class I, KvElement E>
void convert_rows_t(const Rows& r, int hd, int32_t j0, int32_t count, float* out) {
  float prm[kMaxRowParams];
  for (int32_t j = 0; j < count; ++j) {
    const RowRef row = prepare_row<I, E>(r.row(j0 + j), hd, r.group_shift, nullptr, prm);
    for (int d = 0; d < hd; d += I::W)
      I::store(out + int64_t{j} * hd + d, load_row<I, E>(row, d, hd));
  }
}

// s[r][0, kKeyTile) = qs[r] . kt[.][col] for r < RB: a register-blocked
// matrix product against the transposed key tile.
template <class I, int RB>
inline void qk_rows(const float* qs, int hd, const float* kt, float* s) {
  using V = typename I::V;
  constexpr int CV = I::kGemmCols;
  static_assert(kKeyTile % (CV * I::W) == 0);
  for (int c0 = 0; c0 < kKeyTile; c0 += CV * I::W) {
    V acc[RB][CV];
    for (int r = 0; r < RB; ++r)
      for (int c = 0; c < CV; ++c) acc[r][c] = I::zero();
    for (int d = 0; d < hd; ++d) {
      V kv[CV];
      for (int c = 0; c < CV; ++c) kv[c] = I::load(kt + d * kKeyTile + c0 + c * I::W);
      for (int r = 0; r < RB; ++r) {
        const V qv = I::set1(qs[r * hd + d]);
        for (int c = 0; c < CV; ++c) acc[r][c] = I::fmadd(qv, kv[c], acc[r][c]);
      }
    }
    for (int r = 0; r < RB; ++r)
      for (int c = 0; c < CV; ++c) I::store(s + r * kKeyTile + c0 + c * I::W, acc[r][c]);
  }
}

// Masks the keys of a [rows][kKeyTile] score tile some query may not see
// (-inf): padding past the tile's count, keys after the query, keys before
// its window. Skipped when the whole tile is visible to every query.
inline void mask_tile(const PrefillTile& a, const KeyTile& tile, int32_t qmin, int32_t qmax,
                      float* s) {
  const int32_t nk = tile.count;
  if (nk == kKeyTile && tile.pos_max <= qmin && (a.window <= 0 || qmax - tile.pos_min < a.window))
    return;
  const int G = a.group;
  for (int t = 0; t < a.n_queries; ++t) {
    for (int32_t j = 0; j < kKeyTile; ++j) {
      if (j < nk && visible(tile.pos[j], a.qpos[t], a.window)) continue;
      for (int g = 0; g < G; ++g) s[(t * G + g) * kKeyTile + j] = kNegInf;
    }
  }
}

// Whether no query of the unit sees any key of the tile (skipped).
inline bool tile_hidden(const PrefillTile& a, const KeyTile& tile, int32_t qmin, int32_t qmax) {
  if (tile.pos_min > qmax) return true;                    // every key after every query
  return a.window > 0 && qmin - tile.pos_max >= a.window;  // every key before every window
}

// Queries scaled into w.qs, running max / sum / accumulator reset.
template <class I>
void start_tile(const PrefillTile& a, const PrefillWork& w) {
  const int G = a.group, hd = a.head_dim, rows = a.n_queries * G;
  for (int t = 0; t < a.n_queries; ++t)
    scale_rows<I>(a.q + t * a.q_stride, G, hd, a.scale, w.qs + t * G * hd);
  std::fill(w.m, w.m + rows, kNegInf);
  std::fill(w.l, w.l + rows, 0.0f);
  std::fill(w.acc, w.acc + rows * hd, 0.0f);
}

// out = acc / l per row.
template <class I>
void finish_tile(const PrefillTile& a, const PrefillWork& w) {
  const int G = a.group, hd = a.head_dim;
  for (int t = 0; t < a.n_queries; ++t) {
    for (int g = 0; g < G; ++g) {
      const int r = t * G + g;
      // l == 0 only when every key is masked for this query: output 0.
      const float inv = w.l[r] > 0.0f ? 1.0f / w.l[r] : 0.0f;
      scale_rows<I>(w.acc + r * hd, 1, hd, inv, a.out + t * a.out_stride + g * hd);
    }
  }
}

template <class I>
void prefill_tile_kernel(const PrefillTile& a, const PrefillWork& w) {
  const int G = a.group, hd = a.head_dim;
  const int nq = a.n_queries;
  const int rows = nq * G;  // row r = t * G + g
  start_tile<I>(a, w);
  const int32_t qmin = *std::min_element(a.qpos, a.qpos + nq);
  const int32_t qmax = *std::max_element(a.qpos, a.qpos + nq);
  for (int32_t kt = 0; kt < a.n_tiles; ++kt) {
    const KeyTile& tile = a.tiles[kt];
    if (tile_hidden(a, tile, qmin, qmax)) continue;
    const int32_t nk = tile.count;
    const float* ktile = a.kt + int64_t{kt} * hd * kKeyTile;
    int r0 = 0;
    for (; r0 + 4 <= rows; r0 += 4) qk_rows<I, 4>(w.qs + r0 * hd, hd, ktile, w.s + r0 * kKeyTile);
    for (; r0 < rows; ++r0) qk_rows<I, 1>(w.qs + r0 * hd, hd, ktile, w.s + r0 * kKeyTile);
    if (a.cap > 0.0f) soft_cap_scores(w.s, int64_t{rows} * kKeyTile, a.cap);
    mask_tile(a, tile, qmin, qmax, w.s);
    softmax_step<I>(w.s, rows, w.m, w.l, w.acc, hd);
    if (tile.v.type == KvElement::F32 && tile.v.contiguous()) {
      pv_rows<I, KvElement::F32>(w.s, rows, tile.v, tile.j0, nk, hd, w.acc);
    } else {
      // Convert the tile's V rows once here rather than once per row pass.
      with_value_element(
          tile.v.type, [&]<KvElement E>() { convert_rows_t<I, E>(tile.v, hd, tile.j0, nk, w.vt); });
      const Rows vt{KvElement::F32, reinterpret_cast<const uint8_t*>(w.vt), int64_t{hd} * 4};
      pv_rows<I, KvElement::F32>(w.s, rows, vt, 0, nk, hd, w.acc);
    }
  }
  finish_tile<I>(a, w);
}

// ---- Prefill with bfloat16 products (Kernels::prefill_tile_bf16)
//
// One algorithm over a "product" policy P, which owns the layouts and the
// two products (Q.K and P.V):
//   the key layout (F32Keys's members, kRound = true): the keys rounded,
//     then packed by pack_keys_t
//   P::prepare_queries(qs, rows, hd): rounded scaled queries into P's layout,
//     row r still starting at qs + r * hd
//   P::qk<RB>(qs, hd, kt, s): s[r][0, kKeyTile) for RB rows
//   P::prepare_weights(s, rows, npairs): softmax weights into P's layout,
//     row r still at s + r * kKeyTile; pairs past npairs are not read
//   P::prepare_values<E>(v, hd, j0, nk, vt): rows [j0, j0 + nk) rounded,
//     padded to an even count with zeros
//   P::pv(s, rows, vt, npairs, hd, acc): acc[r] += the pairs' weighted rows
// Bf16Emulated is the policy of every table (f32 FMAs on rounded values);
// attention_avx512_bf16.cpp's Bf16Native runs vdpbf16ps.

// f32 FMAs on bf16-rounded values. A pair's odd element goes first, as in
// vdpbf16ps, by swapping the elements of every pair in the packed operands:
// key element d at row d ^ 1, query element d at d ^ 1, weight j at column
// j ^ 1 and V row j at row j ^ 1, so the f32 kernels' running order (d, then
// j, ascending) takes each pair odd first.
template <class I>
struct Bf16Emulated {
  static constexpr bool kRound = true;
  static void put_keys(float* kt, int32_t j, int d, const float* vals, int n) {
    for (int i = 0; i < n; ++i) kt[((d + i) ^ 1) * kKeyTile + j] = vals[i];
  }
  static void zero_columns(float* kt, int hd, int32_t count) {
    F32Keys::zero_columns(kt, hd, count);  // the same rows, in another order
  }
  static void prepare_queries(float* qs, int rows, int hd) {
    for (int i = 0; i < rows * hd; i += I::W) I::store(qs + i, I::round_bf16(I::load(qs + i)));
    for (int i = 0; i < rows * hd; i += 2) std::swap(qs[i], qs[i + 1]);
  }
  template <int RB>
  static void qk(const float* qs, int hd, const float* kt, float* s) {
    qk_rows<I, RB>(qs, hd, kt, s);
  }
  static void prepare_weights(float* s, int rows, int npairs) {
    for (int r = 0; r < rows; ++r) {
      float* sr = s + r * kKeyTile;
      for (int j = 0; j < kKeyTile; j += I::W) I::store(sr + j, I::round_bf16(I::load(sr + j)));
      for (int j = 0; j < 2 * npairs; j += 2) std::swap(sr[j], sr[j + 1]);
    }
  }
  template <KvElement E>
  static void prepare_values(const Rows& v, int hd, int32_t j0, int32_t nk, float* vt) {
    float prm[E == KvElement::Q8 || E == KvElement::Q4 || E == KvElement::Q2 ? kMaxRowParams : 1];
    for (int32_t j = 0; j < nk; ++j) {
      const RowRef row = prepare_row<I, E>(v.row(j0 + j), hd, v.group_shift, nullptr, prm);
      float* dst = vt + int64_t{j ^ 1} * hd;
      for (int d = 0; d < hd; d += I::W)
        I::store(dst + d, I::round_bf16(load_row<I, E>(row, d, hd)));
    }
    if (nk & 1) std::fill(vt + int64_t{nk ^ 1} * hd, vt + int64_t{(nk ^ 1) + 1} * hd, 0.0f);
  }
  static void pv(const float* s, int rows, const float* vt, int npairs, int hd, float* acc) {
    const Rows r{KvElement::F32, reinterpret_cast<const uint8_t*>(vt), int64_t{hd} * 4};
    pv_rows<I, KvElement::F32>(s, rows, r, 0, 2 * npairs, hd, acc);
  }
};

template <class I, class P>
void prefill_tile_bf16_kernel(const PrefillTile& a, const PrefillWork& w) {
  const int G = a.group, hd = a.head_dim;
  const int nq = a.n_queries;
  const int rows = nq * G;  // row r = t * G + g
  start_tile<I>(a, w);
  P::prepare_queries(w.qs, rows, hd);
  const int32_t qmin = *std::min_element(a.qpos, a.qpos + nq);
  const int32_t qmax = *std::max_element(a.qpos, a.qpos + nq);
  for (int32_t kt = 0; kt < a.n_tiles; ++kt) {
    const KeyTile& tile = a.tiles[kt];
    if (tile_hidden(a, tile, qmin, qmax)) continue;
    const int32_t nk = tile.count, npairs = (nk + 1) / 2;
    const float* ktile = a.kt + int64_t{kt} * hd * kKeyTile;
    int r0 = 0;
    for (; r0 + 4 <= rows; r0 += 4)
      P::template qk<4>(w.qs + r0 * hd, hd, ktile, w.s + r0 * kKeyTile);
    for (; r0 < rows; ++r0) P::template qk<1>(w.qs + r0 * hd, hd, ktile, w.s + r0 * kKeyTile);
    if (a.cap > 0.0f) soft_cap_scores(w.s, int64_t{rows} * kKeyTile, a.cap);
    mask_tile(a, tile, qmin, qmax, w.s);
    // The running sum l adds the weights before rounding; the rounded ones
    // weigh the V rows.
    softmax_step<I>(w.s, rows, w.m, w.l, w.acc, hd);
    P::prepare_weights(w.s, rows, npairs);
    with_value_element(tile.v.type, [&]<KvElement E>() {
      P::template prepare_values<E>(tile.v, hd, tile.j0, nk, w.vt);
    });
    P::pv(w.s, rows, w.vt, npairs, hd, w.acc);
  }
  finish_tile<I>(a, w);
}

template <class I>
float exp2_shift_kernel(float* row, int32_t n, float shift, float mul) {
  using V = typename I::V;
  const V sv = I::set1(shift), mv = I::set1(mul);
  V sum = I::zero();
  int32_t j = 0;
  for (; j + I::W <= n; j += I::W) {
    const V e = I::exp2(I::sub(I::load(row + j), sv));
    sum = I::add(sum, e);
    I::store(row + j, I::mul(e, mv));
  }
  if (j < n) {  // tail through a padded vector (-inf weighs 0)
    alignas(64) float tmp[64];
    std::fill(tmp, tmp + I::W, kNegInf);
    std::copy(row + j, row + n, tmp);
    const V e = I::exp2(I::sub(I::load(tmp), sv));
    sum = I::add(sum, e);
    I::store(tmp, I::mul(e, mv));
    std::copy(tmp, tmp + (n - j), row + j);
  }
  return I::hsum(sum);
}

template <class I>
float row_max_kernel(const float* row, int32_t n) {
  using V = typename I::V;
  V mx = I::set1(kNegInf);
  int32_t j = 0;
  for (; j + I::W <= n; j += I::W) mx = I::max(mx, I::load(row + j));
  float r = I::hmax(mx);
  for (; j < n; ++j) r = std::max(r, row[j]);
  return r;
}

// Constant-initialised (no code runs at start-up, on any CPU).
template <class I>
constexpr Kernels make_kernels() {
  Kernels k;
  k.width = I::W;
  k.scores = scores_kernel<I>;
  k.decode_block = decode_block_kernel<I>;
  k.pack_keys = pack_keys_kernel<I, F32Keys>;
  k.prefill_tile = prefill_tile_kernel<I>;
  k.pack_keys_bf16 = pack_keys_kernel<I, Bf16Emulated<I>>;
  k.prefill_tile_bf16 = prefill_tile_bf16_kernel<I, Bf16Emulated<I>>;
  k.exp2_shift = exp2_shift_kernel<I>;
  k.row_max = row_max_kernel<I>;
  k.q8_int_sums = q8_int_sums<I>;
  return k;
}

}  // namespace
}  // namespace kvbench::attn
