// Orchestration of attention: fetches each KV head's view, cuts the work into
// independent units, runs them on the pool (dynamically scheduled: a unit's
// result does not depend on which thread runs it), merges decode partials in
// a fixed order and reports probabilities when the cache asks.
#include "model/ops/attention.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>

#include "model/ops/attention_kernels.h"

namespace kvbench {
namespace {

using attn::kKeyTile;
using attn::kQueryTile;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kLog2e = 1.4426950408889634f;

// The kernels' score scale, in the log2 domain (they exponentiate with exp2).
float log2_scale(const AttentionShape& s) {
  return s.scale > 0.0f ? kLog2e * s.scale : kLog2e / std::sqrt(static_cast<float>(s.head_dim));
}
// The soft-cap in the same domain (attn::soft_cap_scores); 0: none.
float log2_cap(const AttentionShape& s) { return s.softcap > 0.0f ? kLog2e * s.softcap : 0.0f; }

// Decode: at most this many blocks per KV head, and blocks of at least
// kMinBlock keys (a multiple of kKeyTile). Enough units to balance two to
// eight threads at long contexts; few partials to merge.
constexpr int32_t kMaxBlocks = 16;
constexpr int32_t kMinBlock = 4 * kKeyTile;
// Observed probability rows are computed in batches of at most this many floats.
constexpr int64_t kProbBatchFloats = int64_t{1} << 22;

const attn::Kernels* kernels_of(CpuPath path, bool native_bf16) {
  switch (path) {
    case CpuPath::Avx512:
      if (native_bf16 && attn::avx512_bf16_kernels()) return attn::avx512_bf16_kernels();
      return attn::avx512_kernels();
    case CpuPath::Avx2:
      return attn::avx2_kernels();
    case CpuPath::Scalar:
      return attn::scalar_kernels();
  }
  return nullptr;
}

// The widest path at or below `path` whose vector width divides head_dim and
// `group` (the gcd of the parameter groups of the layer's Q8 / Q4 / Q2 pieces;
// head_dim when there are none).
const attn::Kernels& kernels_for(CpuPath path, bool native_bf16, int head_dim, int group) {
  for (CpuPath p : {CpuPath::Avx512, CpuPath::Avx2}) {
    if (static_cast<int>(p) > static_cast<int>(path)) continue;
    const attn::Kernels* k = kernels_of(p, native_bf16);
    if (k && head_dim % k->width == 0 && group % k->width == 0) return *k;
  }
  return *attn::scalar_kernels();
}

attn::Rows rows_of(const KvRawRows& r, int32_t n) {
  attn::Rows out;
  out.type = r.type;
  out.data = static_cast<const uint8_t*>(r.data);
  out.stride = r.row_stride;
  out.set_group(r.group);
  out.index = r.index;
  out.ptrs = r.ptrs;
  out.params = r.params;
  out.n = n;
  return out;
}

// Runs fn(unit, thread) for every unit in [0, n_units), each exactly once,
// handing units to whichever thread is free.
template <class Fn>
void run_units(ThreadPool& pool, int64_t n_units, Fn&& fn) {
  if (n_units <= 0) return;
  std::atomic<int64_t> next{0};
  pool.parallel_for(std::min<int64_t>(pool.size(), n_units), [&](int64_t, int64_t, int thread) {
    for (int64_t u; (u = next.fetch_add(1, std::memory_order_relaxed)) < n_units;) fn(u, thread);
  });
}

// Blocks of one KV head's n keys for decode: depends on n only.
int32_t decode_block_size(int32_t n) {
  const int32_t blocks = std::clamp<int32_t>((n + kMinBlock - 1) / kMinBlock, 1, kMaxBlocks);
  const int32_t size = (n + blocks - 1) / blocks;
  return std::max<int32_t>(kKeyTile, (size + kKeyTile - 1) / kKeyTile * kKeyTile);
}

float* thread_work(AttentionScratch& s, int thread) { return s.work[thread].data(); }

// Floats of a decode block's work buffers before its int8-query area
// (attn::DecodeWork): qs [G][hd], s [G][kKeyTile], qk [G][hd + 1].
int64_t decode_floats(int G, int hd) { return int64_t{G} * (2 * hd + kKeyTile + 1); }

// In place: row[j] = softmax over the log2-domain scores of row (masked -inf -> 0).
void softmax_row(const attn::Kernels& K, float* row, int32_t n) {
  const float mx = K.row_max(row, n);
  if (mx == kNegInf) {
    std::fill(row, row + n, 0.0f);
    return;
  }
  const float sum = K.exp2_shift(row, n, mx, 1.0f);
  const float inv = 1.0f / sum;
  for (int32_t j = 0; j < n; ++j) row[j] *= inv;
}

// In place: row[j] = exp2(row[j] - max) (masked -inf -> 0); returns the
// factor that normalises the row (1 / sum, or 0 when every key is masked).
float exp_row(const attn::Kernels& K, float* row, int32_t n) {
  const float mx = K.row_max(row, n);
  if (mx == kNegInf) {
    std::fill(row, row + n, 0.0f);
    return 0.0f;
  }
  return 1.0f / K.exp2_shift(row, n, mx, 1.0f);
}

// Keys [b, e) of a head's G exponentiated rows (probs [G][n]): each row
// multiplied by its factor (the same numbers softmax_row gives), and sum[j]
// = their sum over the G rows in row order.
void normalise_and_sum(float* probs, int G, int32_t n, const float* scale, int32_t b, int32_t e,
                       float* sum) {
  for (int g = 0; g < G; ++g) {
    float* row = probs + int64_t{g} * n;
    const float f = scale[g];
    for (int32_t j = b; j < e; ++j) row[j] *= f;
  }
  std::copy(probs + b, probs + e, sum + b);
  for (int g = 1; g < G; ++g) {
    const float* row = probs + int64_t{g} * n;
    for (int32_t j = b; j < e; ++j) sum[j] += row[j];
  }
}

void report(KvCache& cache, int layer, int kv_head, int32_t query_index, int32_t query_pos,
            int group, int32_t n, const float* probs, const float* group_sum = nullptr,
            int32_t begin = 0, int32_t end = -1) {
  AttentionRows rows;
  rows.layer = layer;
  rows.kv_head = kv_head;
  rows.query_index = query_index;
  rows.query_pos = query_pos;
  rows.group = group;
  rows.n = n;
  rows.probs = probs;
  rows.head_stride = n;
  rows.group_sum = group_sum;
  rows.begin = begin;
  rows.end = end;
  cache.observe(rows);
}

void decode(const attn::Kernels& K, const AttentionShape& s, int layer, const float* q,
            int32_t qpos, KvCache& cache, bool observe, float* out, ThreadPool& pool,
            AttentionScratch& sc) {
  const int G = s.n_heads / s.n_kv_heads, hd = s.head_dim;
  const float scale = log2_scale(s);
  // Units (KV head, piece, block), head by head and piece by piece.
  sc.unit_head.clear();
  sc.unit_piece.clear();
  sc.unit_begin.clear();
  int64_t prob_floats = 0;
  for (int h = 0; h < s.n_kv_heads; ++h) {
    const AttentionScratch::Head& head = sc.heads[h];
    for (int32_t p = head.piece0; p < head.piece0 + head.n_pieces; ++p) {
      const int32_t n = sc.piece_k[p].n;
      const int32_t bs = decode_block_size(n);
      for (int32_t b = 0; b < n; b += bs) {
        sc.unit_head.push_back(h);
        sc.unit_piece.push_back(p);
        sc.unit_begin.push_back(b);
      }
    }
    prob_floats += int64_t{G} * head.n;
  }
  const int64_t n_units = static_cast<int64_t>(sc.unit_head.size());
  ++sc.decode_calls;
  const int64_t slot = int64_t{G} * (hd + 2);  // acc [G][hd], m [G], l [G]
  if (sc.partials.size() < static_cast<size_t>(n_units * slot)) sc.partials.resize(n_units * slot);
  if (observe && sc.probs.size() < static_cast<size_t>(prob_floats)) sc.probs.resize(prob_floats);
  // probs: per KV head [G][n], heads one after another.
  auto probs_of = [&](int h) {
    int64_t off = 0;
    for (int i = 0; i < h; ++i) off += int64_t{G} * sc.heads[i].n;
    return sc.probs.data() + off;
  };

  run_units(pool, n_units, [&](int64_t u, int thread) {
    const int h = sc.unit_head[u];
    const int32_t p = sc.unit_piece[u];
    const AttentionScratch::Head& head = sc.heads[h];
    const int32_t n = sc.piece_k[p].n;
    const int32_t off = sc.piece_offset[p];
    attn::DecodeBlock a;
    a.q = q + int64_t{h} * G * hd;
    a.scale = scale;
    a.cap = log2_cap(s);
    a.group = G;
    a.head_dim = hd;
    a.k = sc.piece_k[p];
    a.v = sc.piece_v[p];
    a.pos = sc.piece_pos[p];
    a.qpos = qpos;
    a.window = s.window;
    a.begin = sc.unit_begin[u];
    a.end = std::min(n, a.begin + decode_block_size(n));
    if (observe) {
      a.scores = probs_of(h) + off;
      a.scores_stride = head.n;
    }
    a.q8 = s.q8_query;
    a.q8_tag = (sc.decode_calls << 24) | static_cast<uint64_t>(h + 1);
    float* w = thread_work(sc, thread);
    const attn::DecodeWork work{w, w + G * hd, w + G * hd + G * attn::kKeyTile,
                                w + decode_floats(G, hd)};
    float* part = sc.partials.data() + u * slot;
    K.decode_block(a, work, part + G * hd, part + G * hd + G, part);
  });

  // Merge each KV head's blocks in block order (fixed: deterministic).
  int64_t u0 = 0;
  for (int h = 0; h < s.n_kv_heads; ++h) {
    int64_t u1 = u0;
    while (u1 < n_units && sc.unit_head[u1] == h) ++u1;
    for (int g = 0; g < G; ++g) {
      float* o = out + (int64_t{h} * G + g) * hd;
      float M = kNegInf;
      for (int64_t u = u0; u < u1; ++u) M = std::max(M, sc.partials[u * slot + G * hd + g]);
      std::fill(o, o + hd, 0.0f);
      if (M == kNegInf) continue;  // no visible key: output 0
      double L = 0.0;
      for (int64_t u = u0; u < u1; ++u) {
        const float* p = sc.partials.data() + u * slot;
        const float mb = p[G * hd + g];
        if (mb == kNegInf) continue;
        const float w = std::exp2(mb - M);
        L += static_cast<double>(w) * p[G * hd + G + g];
        const float* acc = p + g * hd;
        for (int d = 0; d < hd; ++d) o[d] += w * acc[d];
      }
      const float inv = static_cast<float>(1.0 / L);
      for (int d = 0; d < hd; ++d) o[d] *= inv;
    }
    u0 = u1;
  }

  if (!observe) return;
  // Scores were stored by the kernels: exponentiate each row (parallel over
  // rows), then normalise and sum each head's group (parallel over chunks of
  // keys), so that the observer's serial pass reads one number per key.
  if (sc.row_scale.size() < static_cast<size_t>(s.n_kv_heads) * G)
    sc.row_scale.resize(int64_t{s.n_kv_heads} * G);
  int64_t sum_floats = 0;
  for (int h = 0; h < s.n_kv_heads; ++h) sum_floats += sc.heads[h].n;
  if (sc.group_sums.size() < static_cast<size_t>(sum_floats)) sc.group_sums.resize(sum_floats);
  auto sums_of = [&](int h) {
    int64_t off = 0;
    for (int i = 0; i < h; ++i) off += sc.heads[i].n;
    return sc.group_sums.data() + off;
  };
  run_units(pool, int64_t{s.n_kv_heads} * G, [&](int64_t u, int) {
    const int h = static_cast<int>(u / G), g = static_cast<int>(u % G);
    sc.row_scale[u] = exp_row(K, probs_of(h) + int64_t{g} * sc.heads[h].n, sc.heads[h].n);
  });
  constexpr int32_t kSumChunk = 1024;
  sc.unit_head.clear();
  sc.unit_begin.clear();
  for (int h = 0; h < s.n_kv_heads; ++h)
    for (int32_t b = 0; b < sc.heads[h].n; b += kSumChunk) {
      sc.unit_head.push_back(h);
      sc.unit_begin.push_back(b);
    }
  // A cache that observes concurrently takes each chunk on the thread that
  // summed it (its sums still in that core's cache); others get one call per
  // head afterwards.
  const bool concurrent = cache.observe_concurrently();
  run_units(pool, static_cast<int64_t>(sc.unit_head.size()), [&](int64_t u, int) {
    const int h = sc.unit_head[u];
    const int32_t n = sc.heads[h].n, b = sc.unit_begin[u], e = std::min(n, b + kSumChunk);
    normalise_and_sum(probs_of(h), G, n, sc.row_scale.data() + int64_t{h} * G, b, e, sums_of(h));
    if (concurrent) report(cache, layer, h, 0, qpos, G, n, probs_of(h), sums_of(h), b, e);
  });
  if (concurrent) return;
  for (int h = 0; h < s.n_kv_heads; ++h)
    report(cache, layer, h, 0, qpos, G, sc.heads[h].n, probs_of(h), sums_of(h));
}

void prefill(const attn::Kernels& K, const AttentionShape& s, const float* q,
             std::span<const int32_t> positions, float* out, ThreadPool& pool,
             AttentionScratch& sc) {
  const int G = s.n_heads / s.n_kv_heads, hd = s.head_dim;
  const int64_t n_tokens = static_cast<int64_t>(positions.size());
  const int64_t q_stride = int64_t{s.n_heads} * hd;
  const float scale = log2_scale(s);
  // bf16 products take a head's elements in pairs (model configs refuse odd head sizes).
  assert(!s.bf16 || hd % 2 == 0);

  // 1. Key tiles of every KV head, piece by piece (a tile never spans two
  //    pieces), with each tile's position range (for skipping fully masked
  //    tiles); keys packed into transposed f32 tiles (bf16: the layout of
  //    the table's prefill_tile_bf16, in the same space).
  sc.head_tile0.resize(s.n_kv_heads + 1);
  sc.tiles.clear();
  sc.tile_piece.clear();
  for (int h = 0; h < s.n_kv_heads; ++h) {
    const AttentionScratch::Head& head = sc.heads[h];
    sc.head_tile0[h] = static_cast<int64_t>(sc.tiles.size());
    for (int32_t p = head.piece0; p < head.piece0 + head.n_pieces; ++p) {
      const int32_t n = sc.piece_k[p].n;
      for (int32_t j0 = 0; j0 < n; j0 += kKeyTile) {
        attn::KeyTile t;
        t.v = sc.piece_v[p];
        t.j0 = j0;
        t.count = std::min<int32_t>(kKeyTile, n - j0);
        t.pos = sc.piece_pos[p] + j0;
        const auto [lo, hi] = std::minmax_element(t.pos, t.pos + t.count);
        t.pos_min = *lo;
        t.pos_max = *hi;
        sc.tiles.push_back(t);
        sc.tile_piece.push_back(p);
      }
    }
  }
  sc.head_tile0[s.n_kv_heads] = static_cast<int64_t>(sc.tiles.size());
  const int64_t n_tiles = sc.head_tile0[s.n_kv_heads];
  const int64_t tile_floats = int64_t{hd} * kKeyTile;
  if (sc.packed_keys.size() < static_cast<size_t>(n_tiles * tile_floats))
    sc.packed_keys.resize(n_tiles * tile_floats);
  const auto pack = s.bf16 ? K.pack_keys_bf16 : K.pack_keys;
  run_units(pool, n_tiles, [&](int64_t tile, int) {
    const attn::KeyTile& t = sc.tiles[tile];
    pack(sc.piece_k[sc.tile_piece[tile]], hd, t.j0, t.count,
         sc.packed_keys.data() + tile * tile_floats);
  });

  // 2. Units (KV head, query tile), heaviest first: the cost of a unit is the
  //    number of key tiles it does not skip.
  const int64_t n_qtiles = (n_tokens + kQueryTile - 1) / kQueryTile;
  const int64_t n_units = s.n_kv_heads * n_qtiles;
  sc.unit_cost.resize(n_units);
  sc.order.resize(n_units);
  for (int64_t u = 0; u < n_units; ++u) {
    const int h = static_cast<int>(u / n_qtiles);
    const int64_t t0 = (u % n_qtiles) * kQueryTile;
    const int64_t t1 = std::min(n_tokens, t0 + kQueryTile);
    const auto [qmin, qmax] = std::minmax_element(positions.begin() + t0, positions.begin() + t1);
    int64_t cost = 0;
    for (int64_t t = sc.head_tile0[h]; t < sc.head_tile0[h + 1]; ++t)
      cost +=
          sc.tiles[t].pos_min <= *qmax && (s.window <= 0 || *qmin - sc.tiles[t].pos_max < s.window);
    sc.unit_cost[u] = cost;
    sc.order[u] = static_cast<int32_t>(u);
  }
  std::sort(sc.order.begin(), sc.order.end(), [&](int32_t a, int32_t b) {
    return sc.unit_cost[a] != sc.unit_cost[b] ? sc.unit_cost[a] > sc.unit_cost[b] : a < b;
  });

  // 3. Flash attention per unit.
  const int rows = kQueryTile * G;
  const auto tile_kernel = s.bf16 ? K.prefill_tile_bf16 : K.prefill_tile;
  run_units(pool, n_units, [&](int64_t i, int thread) {
    const int64_t u = sc.order[i];
    const int h = static_cast<int>(u / n_qtiles);
    const int64_t t0 = (u % n_qtiles) * kQueryTile;
    attn::PrefillTile a;
    a.q = q + t0 * q_stride + int64_t{h} * G * hd;
    a.q_stride = q_stride;
    a.out = out + t0 * q_stride + int64_t{h} * G * hd;
    a.out_stride = q_stride;
    a.scale = scale;
    a.cap = log2_cap(s);
    a.group = G;
    a.head_dim = hd;
    a.n_queries = static_cast<int32_t>(std::min<int64_t>(kQueryTile, n_tokens - t0));
    a.qpos = positions.data() + t0;
    a.window = s.window;
    a.kt = sc.packed_keys.data() + sc.head_tile0[h] * tile_floats;
    a.tiles = sc.tiles.data() + sc.head_tile0[h];
    a.n_tiles = static_cast<int32_t>(sc.head_tile0[h + 1] - sc.head_tile0[h]);
    float* w = thread_work(sc, thread);
    attn::PrefillWork work;
    work.qs = w;
    work.s = work.qs + rows * hd;
    work.acc = work.s + rows * kKeyTile;
    work.m = work.acc + rows * hd;
    work.l = work.m + rows;
    work.vt = work.l + rows;
    tile_kernel(a, work);
  });
}

// Probabilities of the query rows [first, n_tokens), recomputed from the
// scores (prefill only asks for them when the cache wants them), reported per
// KV head then per query, in batches.
void observe_prefill(const attn::Kernels& K, const AttentionShape& s, int layer, const float* q,
                     std::span<const int32_t> positions, int64_t first, KvCache& cache,
                     ThreadPool& pool, AttentionScratch& sc) {
  const int G = s.n_heads / s.n_kv_heads, hd = s.head_dim;
  const int64_t n_tokens = static_cast<int64_t>(positions.size());
  const int64_t q_stride = int64_t{s.n_heads} * hd;
  const float scale = log2_scale(s);
  for (int h = 0; h < s.n_kv_heads; ++h) {
    const AttentionScratch::Head& head = sc.heads[h];
    const int64_t row_floats = int64_t{G} * std::max<int32_t>(1, head.n);
    const int64_t batch = std::max<int64_t>(1, kProbBatchFloats / row_floats);
    for (int64_t b0 = first; b0 < n_tokens; b0 += batch) {
      const int64_t b1 = std::min(n_tokens, b0 + batch);
      if (sc.probs.size() < static_cast<size_t>((b1 - b0) * row_floats))
        sc.probs.resize((b1 - b0) * row_floats);
      run_units(pool, b1 - b0, [&](int64_t i, int thread) {
        const int64_t t = b0 + i;
        float* qs = thread_work(sc, thread);
        const float* qt = q + t * q_stride + int64_t{h} * G * hd;
        for (int j = 0; j < G * hd; ++j) qs[j] = qt[j] * scale;
        float* dst = sc.probs.data() + i * row_floats;
        for (int32_t p = head.piece0; p < head.piece0 + head.n_pieces; ++p)
          K.scores(qs, G, hd, sc.piece_k[p], 0, sc.piece_k[p].n, dst + sc.piece_offset[p], head.n);
        for (int g = 0; g < G; ++g) {
          float* row = dst + int64_t{g} * head.n;
          if (s.softcap > 0.0f) attn::soft_cap_scores(row, head.n, log2_cap(s));
          for (int32_t p = head.piece0; p < head.piece0 + head.n_pieces; ++p) {
            const int32_t* pos = sc.piece_pos[p];
            float* r = row + sc.piece_offset[p];
            for (int32_t j = 0; j < sc.piece_k[p].n; ++j)
              if (!attn::visible(pos[j], positions[t], s.window)) r[j] = kNegInf;
          }
          softmax_row(K, row, head.n);
        }
      });
      for (int64_t t = b0; t < b1; ++t)
        report(cache, layer, h, static_cast<int32_t>(t), positions[t], G, head.n,
               sc.probs.data() + (t - b0) * row_floats);
    }
  }
}

}  // namespace

bool bf16_attention_native(CpuPath path) {
  return path == CpuPath::Avx512 && attn::avx512_bf16_kernels() != nullptr;
}

bool q8_query_integer(CpuPath path, KvElement keys, int hd, int group) {
  using E = KvElement;
  if (!attn::q8_key(keys) && keys != E::K2) return false;
  // Rows attend() cannot read in place are decoded to f32 first (its
  // in_place test): their int8 query is never made.
  if (hd <= 0 || group <= 0 || !std::has_single_bit(static_cast<unsigned>(group))) return false;
  if (keys != E::K2 && 2 * (hd / group) > attn::kMaxRowParams) return false;
  const attn::Kernels& K = kernels_for(path, false, hd, group);
  return K.q8_int_sums && K.q8_int_sums(keys, hd, group);
}

void attend(const AttentionShape& s, int layer, const float* q, std::span<const int32_t> positions,
            KvCache& cache, float* out, ThreadPool& pool, AttentionScratch& sc) {
  const int64_t n_tokens = static_cast<int64_t>(positions.size());
  const int hd = s.head_dim;
  const int G = s.n_heads / s.n_kv_heads;
  assert(n_tokens > 0 && G * s.n_kv_heads == s.n_heads);

  // Fetch every KV head's view on this thread (the cache is not required to
  // be thread-safe); keep what it points to, not the view object. A view
  // without pieces (or whose K and V differ in type) is decoded into scratch
  // through keys()/values() and read as one f32 piece.
  sc.heads.resize(s.n_kv_heads);
  sc.k_decoded.resize(s.n_kv_heads);
  sc.v_decoded.resize(s.n_kv_heads);
  sc.piece_k.clear();
  sc.piece_v.clear();
  sc.piece_offset.clear();
  sc.piece_pos.clear();
  int group = hd;  // gcd of the Q8 / Q4 parameter groups
  for (int h = 0; h < s.n_kv_heads; ++h) {
    const KvHeadView& view = cache.view(layer, h);
    AttentionScratch::Head& head = sc.heads[h];
    head.n = view.size();
    head.piece0 = static_cast<int32_t>(sc.piece_k.size());
    const std::span<const KvPiece> pieces = view.pieces();
    bool in_place = !pieces.empty() || head.n == 0;
    for (const KvPiece& p : pieces) {
      in_place = in_place && attn::kernels_read(p.k.type, p.v.type);
      for (const KvRawRows* r : {&p.k, &p.v})
        if (r->type == KvElement::Q8 || r->type == KvElement::Q4 || r->type == KvElement::Q2)
          // Groups read in place are powers of two (attn::Rows::group_shift);
          // any other group is decoded into scratch.
          in_place = in_place && r->group > 0 && std::has_single_bit(unsigned(r->group)) &&
                     2 * (hd / r->group) <= attn::kMaxRowParams;
    }
    if (in_place) {
      for (const KvPiece& p : pieces) {
        if (p.count == 0) continue;
        sc.piece_k.push_back(rows_of(p.k, p.count));
        sc.piece_v.push_back(rows_of(p.v, p.count));
        sc.piece_offset.push_back(p.offset);
        sc.piece_pos.push_back(p.pos ? p.pos : view.positions() + p.offset);
        for (const KvRawRows* r : {&p.k, &p.v})
          if (r->type == KvElement::Q8 || r->type == KvElement::Q4 || r->type == KvElement::Q2)
            group = std::gcd(group, r->group);
      }
    } else {
      auto& kd = sc.k_decoded[h];
      auto& vd = sc.v_decoded[h];
      const size_t need = static_cast<size_t>(head.n) * hd;
      if (kd.size() < need) kd.resize(need);
      if (vd.size() < need) vd.resize(need);
      const int64_t stride = int64_t{hd} * 4;
      KvRawRows k{KvElement::F32, view.keys(0, head.n, kd.data()), stride};
      KvRawRows v{KvElement::F32, view.values(0, head.n, vd.data()), stride};
      sc.piece_k.push_back(rows_of(k, head.n));
      sc.piece_v.push_back(rows_of(v, head.n));
      sc.piece_offset.push_back(0);
      sc.piece_pos.push_back(view.positions());
    }
    head.n_pieces = static_cast<int32_t>(sc.piece_k.size()) - head.piece0;
  }

  // Per-thread work buffers, sized for the largest user (a prefill unit;
  // a decode block needs decode_floats, and the int8-query area after them).
  const size_t rows = static_cast<size_t>(kQueryTile) * G;
  size_t work = rows * (2 * hd + kKeyTile + 2) + static_cast<size_t>(kKeyTile) * hd;
  if (n_tokens == 1 && s.q8_query)
    work = std::max<size_t>(work, decode_floats(G, hd) + attn::q8_work_bytes(G, hd, group) / 4 + 1);
  if (sc.work.size() < static_cast<size_t>(pool.size())) sc.work.resize(pool.size());
  for (auto& w : sc.work)
    if (w.size() < work) w.resize(work);

  const attn::Kernels& K = kernels_for(sc.path, sc.native_bf16, hd, group);
  const AttentionRequest request = cache.attention_request(layer);
  const bool observe = request.wanted && request.last_queries != 0;
  if (n_tokens == 1) {
    decode(K, s, layer, q, positions[0], cache, observe, out, pool, sc);
    return;
  }
  prefill(K, s, q, positions, out, pool, sc);
  if (!observe) return;
  const int64_t first =
      request.last_queries < 0 ? 0 : std::max<int64_t>(0, n_tokens - request.last_queries);
  observe_prefill(K, s, layer, q, positions, first, cache, pool, sc);
}

}  // namespace kvbench
