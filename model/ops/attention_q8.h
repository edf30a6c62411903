// Internal to attention_impl.h: decode scores of Q8 / Q4 / Q2 keys against
// an int8 query (AttentionShape::q8_query), as llama.cpp scores a quantized
// K cache (it converts Q to the K type's vec_dot type, Q8 blocks); KIVI's K2
// keys at the end of this file (their query is made per block of tokens).
//
// The query (scaled, log2 domain) is quantized per block of the keys' own
// parameter group: q[d] ~ a_b * qi[d], a_b = max |q| / 127 over block b,
// qi[d] = round(q[d] / a_b) in [-127, 127] (the int8 codec's rule). Then,
// for a key with codes c and, per block, Q8's scale s_b or Q4 / Q2's
// (min m_b, step t_b):
//   Q8:      q . k ~ sum_b u_b, u_b = S_b * (a_b * s_b)
//   Q4 / Q2: q . k ~ sum_b u_b, u_b = S_b * (a_b * t_b) + (m_b + z t_b) * Q_b
// with S_b = sum over the block of qi[d] * (c[d] - z), an integer, z the
// codes' centre (0 for Q8's signed codes, 8 for Q4's 0-15, 2 for Q2's 0-3),
// and Q_b the f32 sum of the block's query (exact: only the code term sees
// the query's rounding). The error is the query's rounding, at most a_b / 2
// times |c[d] - z| t_b (Q8: |c[d]| s_b) per element: centring the codes
// moves the block's offset into the exact term (int4's NLL change on
// SmolLM2 went from +0.014 to -0.010 nats a token, 2026-11-30:
// docs/performance-log.md).
// The sum is taken as (u_0 + u_1) + (u_2 + u_3) + ..., the pairs added in
// order: a vector path holds a 64-element span's two blocks of 32 together.
//
// Integer sums are exact on every path: an instruction-set path either sums
// them as integers (AVX-512 VNNI: vpdpbusd; AVX2: vpmaddubsw, then vpmaddwd
// by ones, attention_avx2_q8.h: its pairs of products stay below s16
// saturation for every key code, given qi in [-127, 127]) or as f32
// products of integer-valued floats, every partial sum an integer below
// 2^24 (|qi c| <= 127 x 255 over a block of at most 256 elements: 8.3e6 <
// 1.7e7), so exact in any order. The float epilogue above is one shared
// sequence of operations per key (multiply, then add, never fused),
// vectorised across keys: every path gives the same scores bit for bit, and
// the scalar path is the reference the others are tested against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "model/ops/attention_kernels.h"

namespace kvbench::attn {
namespace {

// qs [G][hd], scaled, element order -> w's codes, scales and sums. Plain
// scalar code shared by every path (the same codes everywhere). The codes
// are in [-127, 127], never -128: the AVX2 kernel's bound needs that.
inline void q8_quantize_query(const float* qs, int G, int hd, Q8Work& w) {
  const int B = w.block;
  for (int g = 0; g < G; ++g)
    for (int b = 0; b < w.nb; ++b) {
      const float* x = qs + g * hd + b * B;
      int8_t* c = w.qi + g * hd + b * B;
      float amax = 0.0f, sum = 0.0f;
      for (int i = 0; i < B; ++i) {
        amax = std::max(amax, std::fabs(x[i]));
        sum += x[i];
      }
      const float a = amax / 127.0f;
      int32_t isum = 0;
      for (int i = 0; i < B; ++i) {
        const float r = a > 0.0f ? std::nearbyint(x[i] / a) : 0.0f;
        const int q = std::isnan(r) ? 0 : static_cast<int>(std::clamp(r, -127.0f, 127.0f));
        c[i] = static_cast<int8_t>(q);
        w.qf[g * hd + b * B + i] = static_cast<float>(q);
        isum += q;
      }
      w.a[g * w.nb + b] = a;
      w.qsum[g * w.nb + b] = sum;
      w.isum[g * w.nb + b] = isum;
    }
}

// Whether the path's integer kernel takes these keys: a path offers one by
// static member templates q8_int_kernel<KE>(hd, block) -> bool,
// q8_order<KE>(G, hd, w) (run once per decode block after the query's
// codes) and q8_scores<KE>(k, G, hd, j0, nk, w, s) (a tile's scores, the
// same operations as the reference below).
template <class I, KvElement KE>
constexpr bool q8_has_int_kernel() {
  if constexpr (requires { I::template q8_int_kernel<KE>(0, 0); })
    return true;
  else
    return false;
}

template <class I, KvElement KE>
inline bool q8_int_path(int hd, int block) {
  if constexpr (q8_has_int_kernel<I, KE>())
    return I::template q8_int_kernel<KE>(hd, block);
  else
    return false;
}

// Once per decode block: the query's codes (and the path's order of them).
template <class I, KvElement KE>
inline void q8_prepare(const float* qs, int G, int hd, Q8Work& w) {
  q8_quantize_query(qs, G, hd, w);
  if constexpr (q8_has_int_kernel<I, KE>())
    if (q8_int_path<I, KE>(hd, w.block)) I::template q8_order<KE>(G, hd, w);
}

// Per-key parameters of keys [j0, j0 + nk) into p0 / p1, transposed so the
// epilogue reads them as vectors across keys; columns [nk, kKeyTile) zero.
template <class I, KvElement KE>
inline void q8_gather_params(const Rows& k, int hd, int32_t j0, int32_t nk, Q8Work& w) {
  float prm[kMaxRowParams];
  for (int32_t j = 0; j < nk; ++j) {
    prepare_row<I, KE>(k.row(j0 + j), hd, k.group_shift, nullptr, prm);
    for (int b = 0; b < w.nb; ++b) {
      if constexpr (KE == KvElement::Q8) {
        w.p0[b * kQ8Cols + j] = prm[b];
      } else {
        // m + z t: z t is exact (z a power of two), so one rounding on
        // every path, fused or not.
        const float zt = static_cast<float>(q8_center<KE>()) * prm[2 * b + 1];
        w.p0[b * kQ8Cols + j] = prm[2 * b] + zt;
        w.p1[b * kQ8Cols + j] = prm[2 * b + 1];
      }
    }
  }
  for (int b = 0; b < w.nb; ++b) {
    std::fill(w.p0 + b * kQ8Cols + nk, w.p0 + b * kQ8Cols + kKeyTile, 0.0f);
    if constexpr (KE != KvElement::Q8)
      std::fill(w.p1 + b * kQ8Cols + nk, w.p1 + b * kQ8Cols + kKeyTile, 0.0f);
  }
}

// The codes of W elements [d, d + W) of a key row as floats.
template <class I, KvElement KE>
inline typename I::V q8_codes(const uint8_t* row, int d) {
  if constexpr (KE == KvElement::Q8)
    return I::load_i8(reinterpret_cast<const int8_t*>(row) + d);
  else if constexpr (KE == KvElement::Q4)
    return I::load_u4(row, d);
  else
    return I::load_u2(row, d);
}

// S[g][b][j] for keys [j0, j0 + nk) by f32 products of integer-valued
// floats (exact, see the header comment): the path of every table without
// an integer dot product, and of shapes a path's integer kernel skips.
template <class I, KvElement KE>
inline void q8_sums_f32(const Rows& k, int G, int hd, int32_t j0, int32_t nk, Q8Work& w) {
  using V = typename I::V;
  const int B = w.block;
  for (int32_t j = 0; j < nk; ++j) {
    const uint8_t* row = k.row(j0 + j);
    for (int b = 0; b < w.nb; ++b)
      for (int g = 0; g < G; ++g) {
        V acc = I::zero();
        for (int d = b * B; d < (b + 1) * B; d += I::W)
          acc = I::fmadd(I::load(w.qf + g * hd + d), q8_codes<I, KE>(row, d), acc);
        w.S[(g * w.nb + b) * kQ8Cols + j] =
            static_cast<int32_t>(I::hsum(acc)) - q8_center<KE>() * w.isum[g * w.nb + b];
      }
  }
}

// Scores (log2 domain) of G heads over keys [j0, j0 + nk) of a decode
// block into s[g * kKeyTile + j]; q8_prepare ran on this block's query.
// Columns past nk may be written; the caller masks them.
template <class I, KvElement KE>
[[gnu::always_inline]] inline void q8_scores(const Rows& k, int G, int hd, int32_t j0, int32_t nk,
                                             Q8Work& w, float* s) {
  using V = typename I::V;
  // The next tile's rows on their way to L2 while this one is summed.
  const int64_t row_bytes = kv_row_bytes(KE, hd, w.block);
  for (int32_t j = j0; j < j0 + nk; ++j) prefetch_row_bytes(k, j, kKeyTile, row_bytes);
  if constexpr (q8_has_int_kernel<I, KE>())
    if (q8_int_path<I, KE>(hd, w.block)) return I::template q8_scores<KE>(k, G, hd, j0, nk, w, s);
  q8_sums_f32<I, KE>(k, G, hd, j0, nk, w);
  // Columns past the tile's keys: zero sums, so the vectors below read no
  // stale numbers.
  for (int r = 0; r < G * w.nb; ++r)
    std::fill(w.S + r * kQ8Cols + nk, w.S + r * kQ8Cols + kKeyTile, 0);
  q8_gather_params<I, KE>(k, hd, j0, nk, w);
  // Per block u_b = S_b (a_b x step_b) + min_b x Q_b (Q8: S_b (a_b x
  // scale_b)); per pair of blocks t = u_b + u_b+1 (a lone last block: t =
  // u_b); the score is the pairs' t summed in order.
  const auto term = [&](int g, int b, int32_t j) {
    const V sum = I::load_i32(w.S + (g * w.nb + b) * kQ8Cols + j);
    const V as = I::set1(w.a[g * w.nb + b]);
    if constexpr (KE == KvElement::Q8)
      return I::mul(sum, I::mul(as, I::load(w.p0 + b * kQ8Cols + j)));
    else
      return I::add(I::mul(sum, I::mul(as, I::load(w.p1 + b * kQ8Cols + j))),
                    I::mul(I::load(w.p0 + b * kQ8Cols + j), I::set1(w.qsum[g * w.nb + b])));
  };
  for (int g = 0; g < G; ++g)
    for (int32_t j = 0; j < nk; j += I::W) {
      V acc = I::zero();
      for (int b = 0; b < w.nb; b += 2) {
        const V t = b + 1 < w.nb ? I::add(term(g, b, j), term(g, b + 1, j)) : term(g, b, j);
        acc = b == 0 ? t : I::add(acc, t);
      }
      I::store(s + g * kKeyTile + j, acc);
    }
}

// KIVI's keys (K2) against an int8 query. A K2 block of tokens shares a
// (min m_c, step t_c) per channel c, so the query to quantize is the
// block's r_c = q_c t_c, made again for each block (the tokens' codes stay
// as stored):
//   q . k = sum_c q_c (m_c + 2 t_c) + sum_c r_c (code_c - 2)
//         ~ qm + sum_b a_b (S_b - 2 I_b)
// with qm the first sum in f32 (exact: only the code term sees the query's
// rounding), r quantized in blocks of q8_k2_block(hd) elements by the rule
// above (a_b = max |r| / 127, codes ri rounded), S_b = sum ri_c code_c and
// I_b = sum ri_c over block b: the centre 2 as Q2's. The error is at most
// a_b / 2 times |code_c - 2| per element.
// qm's order is fixed so every path can give the same bits: 16 lanes, lane
// c % 16 taking fused multiply-adds in order of c, then folded (lane i +=
// lane i + 8, then + 4, + 2, + 1). The score is (u_0 + u_1) + (u_2 + u_3) +
// ... + qm with u_b = float(S_b - 2 I_b) x a_b (multiply, then add).

// The query of the K2 block whose parameters are kp ([2][hd] f16: mins, then
// steps) into w: qi / qf its codes, a and isum per block, qm per head.
// Plain scalar code, the reference (the integer kernel has its own, tested
// to give the same numbers).
template <class I>
inline void k2q8_prepare_ref(const float* qs, int G, int hd, const uint16_t* kp, Q8Work& w) {
  alignas(64) float prm[2 * kMaxRowParams];
  I::halves(kp, 2 * hd, prm);  // f16 -> f32 is exact on every path
  const float* mins = prm;
  const float* steps = prm + hd;
  const int B = w.block;
  for (int g = 0; g < G; ++g) {
    const float* q = qs + g * hd;
    float* r = w.qf + g * hd;  // r first, then overwritten by the codes
    float lane[16] = {};
    for (int c = 0; c < hd; ++c) {
      const float zt = static_cast<float>(q8_center<KvElement::Q2>()) * steps[c];  // exact
      const float centre = mins[c] + zt;
      lane[c % 16] = std::fma(q[c], centre, lane[c % 16]);
      r[c] = q[c] * steps[c];
    }
    for (int width = 8; width >= 1; width /= 2)
      for (int i = 0; i < width; ++i) lane[i] = lane[i] + lane[i + width];
    w.qm[g] = lane[0];
    for (int b = 0; b < w.nb; ++b) {
      float amax = 0.0f;
      for (int i = b * B; i < (b + 1) * B; ++i) amax = std::max(amax, std::fabs(r[i]));
      const float a = amax / 127.0f;
      int32_t isum = 0;
      for (int i = b * B; i < (b + 1) * B; ++i) {
        const float x = a > 0.0f ? std::nearbyint(r[i] / a) : 0.0f;
        const int code = std::isnan(x) ? 0 : static_cast<int>(std::clamp(x, -127.0f, 127.0f));
        w.qi[g * hd + i] = static_cast<int8_t>(code);
        r[i] = static_cast<float>(code);
        isum += code;
      }
      w.a[g * w.nb + b] = a;
      w.isum[g * w.nb + b] = isum;
    }
  }
}

// Whether the path's integer kernel takes K2 keys of this head size: a
// path offers one by static members k2q8_int_kernel(hd) -> bool,
// k2q8_prepare(qs, G, hd, kp, w) and k2q8_scores(k, G, hd, j0, n, w, s).
template <class I>
constexpr bool k2q8_has_int_kernel() {
  if constexpr (requires { I::k2q8_int_kernel(0); })
    return true;
  else
    return false;
}

template <class I>
inline bool k2q8_int_path(int hd) {
  if constexpr (k2q8_has_int_kernel<I>())
    return I::k2q8_int_kernel(hd);
  else
    return false;
}

// Kernels::q8_int_sums of the path I.
template <class I>
inline bool q8_int_sums(KvElement keys, int hd, int block) {
  switch (keys) {
    case KvElement::Q8:
      return q8_int_path<I, KvElement::Q8>(hd, block);
    case KvElement::Q4:
      return q8_int_path<I, KvElement::Q4>(hd, block);
    case KvElement::Q2:
      return q8_int_path<I, KvElement::Q2>(hd, block);
    case KvElement::K2:
      return k2q8_int_path<I>(hd);
    default:
      return false;
  }
}

// Scores of G heads over keys [j0, j0 + n) of one K2 block (w holds its
// query) into s[g * kKeyTile + j - j0], by f32 products of integer-valued
// floats (exact, as q8_sums_f32) and the epilogue above.
template <class I>
inline void k2q8_scores_f32(const Rows& k, int G, int hd, int32_t j0, int32_t n, const Q8Work& w,
                            float* s) {
  using V = typename I::V;
  const int B = w.block;
  for (int32_t j = 0; j < n; ++j) {
    const uint8_t* row = k.row(j0 + j);
    for (int g = 0; g < G; ++g) {
      float score = 0.0f;
      for (int b = 0; b < w.nb; b += 2) {
        float t = 0.0f;
        for (int bb = b; bb < std::min(b + 2, w.nb); ++bb) {
          V acc = I::zero();
          for (int d = bb * B; d < (bb + 1) * B; d += I::W)
            acc = I::fmadd(I::load(w.qf + g * hd + d), I::load_u2(row, d), acc);
          const int32_t S = static_cast<int32_t>(I::hsum(acc)) -
                            q8_center<KvElement::Q2>() * w.isum[g * w.nb + bb];
          const float u = static_cast<float>(S) * w.a[g * w.nb + bb];
          t = bb == b ? u : t + u;
        }
        score = b == 0 ? t : score + t;
      }
      s[g * kKeyTile + j] = score + w.qm[g];
    }
  }
}

// Scores (log2 domain) of G heads over K2 keys [j0, j0 + nk) into
// s[g * kKeyTile + j]: runs of keys that share a block (one params pointer)
// each use that block's query; *cached is the block w holds the query of
// (kept across the tiles of one decode block).
template <class I>
inline void k2q8_scores(const float* qs, int G, int hd, const Rows& k, int32_t j0, int32_t nk,
                        Q8Work& w, float* s, const uint16_t** cached) {
  // The next tile's codes and block parameters on their way while these
  // are summed (a block's parameters are apart from its codes, 4 hd bytes).
  if (k.contiguous()) {
    const int64_t end = std::min<int64_t>(j0 + nk + kKeyTile, k.n);
    for (int64_t off = (j0 + kKeyTile) * k.stride; off < end * k.stride; off += 64)
      __builtin_prefetch(k.data + off, 0, kPrefetchLocality);
  } else {
    for (int32_t j = j0; j < j0 + nk; ++j) prefetch_row_bytes(k, j, kKeyTile, hd / 4);
  }
  const bool int_path = k2q8_int_path<I>(hd);
  for (int32_t j = j0; j < j0 + nk;) {
    const uint16_t* kp = params_of(k, j);
    int32_t e = j + 1;
    while (e < j0 + nk && params_of(k, e) == kp) ++e;
    if (j + kKeyTile < k.n)
      for (int off = 0; off < 4 * hd; off += 64)
        __builtin_prefetch(reinterpret_cast<const uint8_t*>(params_of(k, j + kKeyTile)) + off, 0,
                           kPrefetchLocality);
    if (kp != *cached) {
      if constexpr (k2q8_has_int_kernel<I>())
        if (int_path) I::k2q8_prepare(qs, G, hd, kp, w);
      if (!int_path) k2q8_prepare_ref<I>(qs, G, hd, kp, w);
      *cached = kp;
    }
    if constexpr (k2q8_has_int_kernel<I>())
      if (int_path) {
        I::k2q8_scores(k, G, hd, j, e - j, w, s + (j - j0));
        j = e;
        continue;
      }
    k2q8_scores_f32<I>(k, G, hd, j, e - j, w, s + (j - j0));
    j = e;
  }
}

}  // namespace
}  // namespace kvbench::attn
