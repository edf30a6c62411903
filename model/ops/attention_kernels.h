// Internal to attention*.cpp: the kernel table each instruction-set path
// fills in (attention_scalar.cpp, attention_avx2.cpp, attention_avx512.cpp),
// and the argument structs the kernels share.
//
// Conventions of every kernel:
//  - Scores are in the log2 domain: q is multiplied by log2(e) / sqrt(head_dim)
//    before the dot products, so softmax weights are exp2(s - max), the same
//    numbers as exp(q.k / sqrt(head_dim) - max) with one multiply less per key.
//  - A masked key (position after the query's) has score -inf and weight 0.
//  - K/V rows are read straight from the cache's storage (f32, or f16 / bf16
//    converted and int8 / int4 dequantized in registers); only prefill packs
//    keys, once per layer and KV head, into transposed f32 tiles for its
//    matrix-product micro-kernel, and converts a key tile's V rows once when
//    they are not plain f32.
//  - A KV head's view is one or more pieces (KvPiece), each of one element
//    type; a decode block and a prefill key tile never span two pieces.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "model/ops/kv_cache.h"

namespace kvbench::attn {

constexpr int kKeyTile = 64;  // keys per online-softmax step
// Most per-group parameters one Q8 / Q4 / Q2 row may carry (2 x head_dim /
// group): the kernels convert a row's parameters into a buffer this long.
constexpr int kMaxRowParams = 512;
constexpr int kQueryTile = 16;  // query tokens per prefill work unit

// x rounded to bfloat16, returned as the f32 of that value: round to nearest
// even; a subnormal becomes a zero of its sign. This is vcvtne2ps2bf16's
// conversion on every finite float (all 2^32 bit patterns compared on a Zen 4
// core); infinities and NaN never reach it. The bf16 prefill attention
// rounds its inputs with it (Kernels::prefill_tile_bf16).
inline float bf16_round(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  if ((b & 0x7f800000u) == 0)
    b &= 0x80000000u;
  else
    b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&x, &b, 4);
  return x;
}

// Rows of one piece of a KV head (see KvRawRows): row j at row(j).
struct Rows {
  KvElement type = KvElement::F32;
  const uint8_t* data = nullptr;
  int64_t stride = 0;
  // Set both through set_group. Q8 / Q4 / Q2 groups read in place are powers
  // of two (attend()), so a vector's parameter group is d >> group_shift, a
  // constant where decode_block_t specialises the common shapes.
  int group = 0;
  int group_shift = 0;  // log2(group)
  const int32_t* index = nullptr;
  const uint8_t* const* ptrs = nullptr;
  const uint16_t* const* params = nullptr;  // K2: per-row block parameters
  int32_t n = 0;                            // rows in the piece (prefetches stay inside)
  const uint8_t* row(int64_t j) const {
    const int64_t i = index ? index[j] : j;  // the index addresses pointers too
    return ptrs ? ptrs[i] : data + i * stride;
  }
  bool contiguous() const { return !ptrs && !index; }
  void set_group(int g) {
    group = g;
    group_shift = g > 0 ? std::countr_zero(static_cast<unsigned>(g)) : 0;
  }
};

// Attention of one query token's `group` heads (the query heads of one KV
// head) over the keys [begin, end) of that KV head: an online-softmax partial
// result, merged with the other blocks' by the caller.
// The mask: a key at position `key` is visible to a query at `query` when it
// is not after it and, with a sliding window (window > 0, Gemma 3's local
// layers), fewer than `window` positions before it: key in
// (query - window, query]. This is llama.cpp's standard SWA mask (masked when
// query - key >= window).
constexpr bool visible(int32_t key, int32_t query, int32_t window) {
  return key <= query && (window <= 0 || query - key < window);
}

// Gemma 2's attention soft-capping, on scores in the log2 domain: `cap` is
// log2(e) times the model's cap, and s = cap * tanh(s / cap) is log2(e)
// times cap' * tanh(x / cap') for the score x = q . k * scale, as llama.cpp
// caps kq before the mask and softmax. std::tanh per score: the same
// function on every path. n scores from s.
inline void soft_cap_scores(float* s, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) s[i] = cap * std::tanh(s[i] * inv);
}

struct DecodeBlock {
  const float* q = nullptr;  // [group][head_dim], unscaled
  float scale = 0.0f;        // log2(e) * the score scale (1 / sqrt(head_dim) by default)
  float cap = 0.0f;          // > 0: soft-capping (soft_cap_scores), log2 domain
  int group = 0;
  int head_dim = 0;
  Rows k, v;
  const int32_t* pos = nullptr;  // key positions, indexed like the rows
  int32_t qpos = 0;              // the query's position; keys with pos > qpos are masked
  int32_t window = 0;            // > 0: keys at qpos - window or before are masked too
  int32_t begin = 0, end = 0;    // rows of the piece (k, v)
  // Optional: raw scores (log2 domain, masked = -inf) of key j written at
  // scores[g * scores_stride + j].
  float* scores = nullptr;
  int64_t scores_stride = 0;
  // Q8 / Q4 / Q2 keys scored against an int8 query (AttentionShape::q8_query,
  // attention_q8.h); other keys ignore it.
  bool q8 = false;
  // Nonzero: the blocks with this tag have the same query and scale (one KV
  // head of one decode call), so a thread quantizes it for the first of
  // them it runs and reuses that for the rest (the same numbers).
  uint64_t q8_tag = 0;
};

// Per-thread buffers of decode_block: qs [group][head_dim], s [group][kKeyTile],
// qk [group][head_dim + 1] (KIVI keys: a block's query and its q . min);
// with DecodeBlock::q8, q8 holds q8_work_bytes(group, head_dim, the keys'
// group) bytes.
struct DecodeWork {
  float* qs = nullptr;
  float* s = nullptr;
  float* qk = nullptr;
  void* q8 = nullptr;
};

// Columns of a key tile's buffers in the int8-query scores
// (attention_q8.h): a key tile, plus the padding of a path that sums four
// keys at a time past a tile's last key.
constexpr int kQ8Cols = kKeyTile + 4;

// Key types whose int8-query scores (AttentionShape::q8_query) quantize the
// query once per decode step. KIVI's K2 keys take the option with a query
// quantized per block of tokens (k2q8_scores); unquantized keys keep f32
// products.
constexpr bool q8_key(KvElement e) {
  return e == KvElement::Q8 || e == KvElement::Q4 || e == KvElement::Q2;
}

// The centre z of the codes of keys of type KE in the int8-query scores
// (attention_q8.h): 0 for Q8's signed codes, 8 for Q4's 0-15, 2 for Q2's
// (and K2's) 0-3.
template <KvElement KE>
constexpr int q8_center() {
  return KE == KvElement::Q4 ? 8 : KE == KvElement::Q2 ? 2 : 0;
}

// The query blocks of K2 keys' int8-query scores: 32 elements (as the
// other keys' default group, and llama.cpp's Q8_0), or the whole row where
// head_dim is not a multiple of 32.
constexpr int q8_k2_block(int hd) { return hd % 32 == 0 ? 32 : hd; }

// A decode block's int8 query and a key tile's integer sums and
// parameters (attention_q8.h), carved from DecodeWork::q8 by q8_carve.
// nb = head_dim / block, block = the keys' parameter group.
struct Q8Work {
  // The DecodeBlock::q8_tag, key group and key type the query was made for:
  // a path orders the codes per key type (q8_order), so a piece of another
  // type in the same head makes it again.
  uint64_t* tag = nullptr;
  int32_t* tag_block = nullptr;
  int32_t* tag_keys = nullptr;
  int8_t* qi = nullptr;     // [G][hd] the query's codes, element order
  int8_t* qp = nullptr;     // [G][hd] the same codes in a path's own order (its q8_order)
  float* qf = nullptr;      // [G][hd] the codes as floats (the f32 integer sums)
  float* a = nullptr;       // [G][nb] block scales: query ~ a * codes
  float* qsum = nullptr;    // [G][nb] f32 sums of the query's blocks (Q4 / Q2 mins)
  int32_t* isum = nullptr;  // [G][nb] sums of the codes' blocks (centres, VNNI's Q8 offset)
  int32_t* S = nullptr;     // [G][nb][kQ8Cols] integer sums of a tile's keys
  float* p0 = nullptr;      // [nb][kQ8Cols] a tile's Q8 scales, or Q4 / Q2 mins
  float* p1 = nullptr;      // [nb][kQ8Cols] a tile's Q4 / Q2 steps
  float* qm = nullptr;      // [G] K2: the block's q . (min + 2 step), f32
  int nb = 0;
  int block = 0;
};

// The integer kernels' epilogue constants (AVX2's and AVX-512's q8_order):
// per head g and 64-element span, 16 floats of w.qf at (g x hd / 64 + span)
// x 16: [a_b x4 | a_b+1 x4 | Q_b x4 | Q_b+1 x4] for the span's blocks b =
// 2 span and 2 span + 1 (qf holds the query's codes as floats only where
// the f32 sums run instead).
inline void q8_span_constants(int G, int hd, Q8Work& w) {
  for (int g = 0; g < G; ++g)
    for (int d0 = 0; d0 < hd; d0 += 64) {
      const int b = g * w.nb + d0 / 32;
      float* c = w.qf + (g * (hd / 64) + d0 / 64) * 16;
      for (int i = 0; i < 4; ++i) {
        c[i] = w.a[b];
        c[4 + i] = w.a[b + 1];
        c[8 + i] = w.qsum[b];
        c[12 + i] = w.qsum[b + 1];
      }
    }
}

// Carves w from `base` (q8_work_bytes(G, hd) bytes), each array on 64 bytes;
// without a base, only counts. Returns the bytes used.
inline size_t q8_carve(void* base, int G, int hd, int block, Q8Work* w) {
  const int nb = hd / block;
  size_t used = 0;
  const auto take = [&](size_t bytes) {
    uint8_t* r = base ? static_cast<uint8_t*>(base) + used : nullptr;
    used += (bytes + 63) / 64 * 64;
    return r;
  };
  const size_t g = static_cast<size_t>(G), d = static_cast<size_t>(hd);
  uint8_t* header = take(16);
  uint8_t* qi = take(g * d);
  uint8_t* qp = take(g * d);
  uint8_t* qf = take(4 * g * d);
  uint8_t* a = take(4 * g * nb);
  uint8_t* qsum = take(4 * g * nb);
  uint8_t* isum = take(4 * g * nb);
  uint8_t* S = take(4 * g * nb * kQ8Cols);
  uint8_t* p0 = take(4 * static_cast<size_t>(nb) * kQ8Cols);
  uint8_t* p1 = take(4 * static_cast<size_t>(nb) * kQ8Cols);
  uint8_t* qm = take(4 * g);
  if (w) {
    w->tag = reinterpret_cast<uint64_t*>(header);
    w->tag_block = reinterpret_cast<int32_t*>(header + 8);
    w->tag_keys = reinterpret_cast<int32_t*>(header + 12);
    w->qi = reinterpret_cast<int8_t*>(qi);
    w->qp = reinterpret_cast<int8_t*>(qp);
    w->qf = reinterpret_cast<float*>(qf);
    w->a = reinterpret_cast<float*>(a);
    w->qsum = reinterpret_cast<float*>(qsum);
    w->isum = reinterpret_cast<int32_t*>(isum);
    w->S = reinterpret_cast<int32_t*>(S);
    w->p0 = reinterpret_cast<float*>(p0);
    w->p1 = reinterpret_cast<float*>(p1);
    w->qm = reinterpret_cast<float*>(qm);
    w->nb = nb;
    w->block = block;
  }
  return used;
}

// The bytes q8_carve takes for G heads of head_dim hd and keys whose
// groups are multiples of `group` (fewer blocks need less) or K2 keys (their
// query blocks, q8_k2_block), plus 64 to align the base.
inline size_t q8_work_bytes(int G, int hd, int group) {
  const int finest = group > 0 ? std::min(group, q8_k2_block(hd)) : q8_k2_block(hd);
  return q8_carve(nullptr, G, hd, finest, nullptr) + 64;
}

// One key tile of a KV head for prefill: rows [j0, j0 + count) of one piece,
// count <= kKeyTile, with their positions and range.
struct KeyTile {
  Rows v;  // the piece's V rows
  int32_t j0 = 0, count = 0;
  const int32_t* pos = nullptr;  // [count] positions of the tile's keys
  int32_t pos_min = 0, pos_max = 0;
};

// One prefill work unit: up to kQueryTile query tokens x the `group` heads of
// one KV head, over all of that head's key tiles (flash attention: scores
// never exist beyond one [rows][kKeyTile] tile).
struct PrefillTile {
  const float* q = nullptr;  // query t, head g at q + t * q_stride + g * head_dim (unscaled)
  int64_t q_stride = 0;
  float* out = nullptr;  // same layout as q
  int64_t out_stride = 0;
  float scale = 0.0f;  // log2(e) * the score scale (1 / sqrt(head_dim) by default)
  float cap = 0.0f;    // > 0: soft-capping (soft_cap_scores), log2 domain
  int group = 0;
  int head_dim = 0;
  int32_t n_queries = 0;           // <= kQueryTile
  const int32_t* qpos = nullptr;   // [n_queries]
  int32_t window = 0;              // > 0: sliding window (see visible())
  const float* kt = nullptr;       // [n_tiles][head_dim][kKeyTile] from pack_keys
  const KeyTile* tiles = nullptr;  // [n_tiles]
  int32_t n_tiles = 0;
};

// Per-thread buffers of prefill_tile (rows = kQueryTile * group):
// qs [rows][head_dim], s [rows][kKeyTile], acc [rows][head_dim], m [rows],
// l [rows], vt [kKeyTile][head_dim].
struct PrefillWork {
  float* qs = nullptr;
  float* s = nullptr;
  float* acc = nullptr;
  float* m = nullptr;
  float* l = nullptr;
  float* vt = nullptr;
};

struct Kernels {
  // Vector width in floats: head_dim, and the group of every Q8 / Q4 piece,
  // must be multiples of it.
  int width = 1;
  // out[g * out_stride + (j - begin)] = sum_d qs[g][d] * k_j[d] for g < group,
  // j in [begin, end); qs already scaled.
  void (*scores)(const float* qs, int group, int head_dim, const Rows& k, int32_t begin,
                 int32_t end, float* out, int64_t out_stride) = nullptr;
  // m[g] (running max, log2 domain, -inf when every key is masked), l[g] (sum
  // of weights), acc[g][head_dim] (unnormalised weighted sum of V rows).
  void (*decode_block)(const DecodeBlock& a, const DecodeWork& w, float* m, float* l,
                       float* acc) = nullptr;
  // Keys [begin, begin + count), count <= kKeyTile, transposed to
  // kt[head_dim][kKeyTile] as f32; columns >= count are zero.
  void (*pack_keys)(const Rows& k, int head_dim, int32_t begin, int32_t count, float* kt) = nullptr;
  void (*prefill_tile)(const PrefillTile& a, const PrefillWork& w) = nullptr;
  // Prefill with bfloat16 products (AttentionShape::bf16): Q (scaled), K, the
  // softmax weights and V rounded to bfloat16 (bf16_round), and every dot
  // product taken in pairs of terms, the odd element's product then the even
  // one's, each a fused multiply-add into an f32 sum. That is what vdpbf16ps
  // (AVX-512 BF16) computes, at twice the f32 FMA rate; tables without it
  // compute the same sums with f32 FMAs on the rounded values (they differ
  // from the instruction only where it flushes a subnormal sum to zero).
  // pack_keys_bf16 packs a tile (at most head_dim x kKeyTile x 4 bytes) in
  // the layout this table's prefill_tile_bf16 reads: f32 rows
  // [head_dim][kKeyTile] with each pair's elements swapped (d at row d ^ 1)
  // for f32 FMAs, bf16 pairs [head_dim / 2][kKeyTile][2] for vdpbf16ps.
  void (*pack_keys_bf16)(const Rows& k, int head_dim, int32_t begin, int32_t count,
                         float* kt) = nullptr;
  void (*prefill_tile_bf16)(const PrefillTile& a, const PrefillWork& w) = nullptr;
  // row[j] = exp2(row[j] - shift) * mul for j < n; returns the sum of
  // exp2(row[j] - shift) (before the multiply).
  float (*exp2_shift)(float* row, int32_t n, float shift, float mul) = nullptr;
  float (*row_max)(const float* row, int32_t n) = nullptr;  // -inf for n == 0
  // Whether decode's int8-query scores (DecodeBlock::q8) of keys of type
  // `keys` at this head_dim (Q8 / Q4 / Q2: in groups of `block`; K2: any
  // block) are summed by this table's integer kernel; false: by f32
  // products of integer-valued floats (the same numbers, slower). Tests
  // read it to know which kernel they compare.
  bool (*q8_int_sums)(KvElement keys, int head_dim, int block) = nullptr;
};

// Whether the kernels read a piece with these K and V element types: equal
// types (not K2), or KIVI's K2 / F32 keys with Q2 / F32 values.
constexpr bool kernels_read(KvElement k, KvElement v) {
  if (k == v) return k != KvElement::K2;
  return (k == KvElement::K2 || k == KvElement::F32) && (v == KvElement::Q2 || v == KvElement::F32);
}

// nullptr when the path is not compiled in (non-x86 builds: simd_stubs.cpp).
const Kernels* scalar_kernels();
const Kernels* avx2_kernels();
const Kernels* avx512_kernels();
// The AVX-512 table with vdpbf16ps in prefill_tile_bf16; nullptr when this
// CPU (or build) lacks AVX-512 BF16.
const Kernels* avx512_bf16_kernels();

// attention_avx512_bf16.cpp's parts of that table.
bool cpu_has_avx512_bf16();
void bf16_native_pack_keys(const Rows& k, int head_dim, int32_t begin, int32_t count, float* kt);
void bf16_native_prefill_tile(const PrefillTile& a, const PrefillWork& w);

}  // namespace kvbench::attn
