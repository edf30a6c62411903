// Causal multi-head attention with grouped KV heads over the entries a cache
// shows for each KV head. Queries see the entries whose position is <= their
// own. Probabilities are handed to the cache only when it asks.
//
// Two paths, both reading K/V rows straight from the cache's storage when it
// exposes them (KvHeadView::pieces: f32, f16 / bf16 converted and int8 /
// int4 / int2 / KIVI-key codes dequantized in registers; several pieces per
// head, e.g. a policy's main rows, its f32 rows of the open step and restored
// pages):
//  - prefill (several query tokens): flash attention. Work units are (KV head,
//    tile of 16 query tokens) with the group's query heads together; keys go
//    in tiles of 64 with an online softmax, so scores never exist beyond one
//    [16 x group][64] tile. Keys are packed once per layer and KV head into
//    transposed f32 tiles for a register-blocked matrix-product micro-kernel.
//  - decode (one query token): split-K. Each piece of a KV head's keys is cut
//    into at most 16 blocks (a partition that depends only on its size);
//    units (KV head, block) compute an online-softmax partial for the group's
//    query heads, sharing each K/V row load; partials are merged in block order.
// Units are independent and merged in a fixed order, so results are
// bit-identical whatever the thread count or scheduling.
//
// Probabilities (when the cache asks) are computed apart from the output:
// for decode from the scores the kernels store on the way, for prefill by
// recomputing the requested rows only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/ops/attention_kernels.h"
#include "model/ops/kv_cache.h"
#include "model/ops/quant_dot.h"
#include "model/ops/thread_pool.h"

namespace kvbench {

struct AttentionShape {
  int n_heads = 0;     // query heads
  int n_kv_heads = 0;  // KV heads; query head h uses KV head h / (n_heads / n_kv_heads)
  int head_dim = 0;
  // > 0: sliding window, a query at p sees the keys at (p - window, p]
  // (attn::visible; Gemma 3's local layers). 0: every key up to p.
  int32_t window = 0;
  // Scores are q . k * scale when > 0 (a file's own attention scale), else
  // q . k / sqrt(head_dim).
  float scale = 0.0f;
  // > 0: attention soft-capping (Gemma 2): each score x becomes
  // softcap * tanh(x / softcap) before the mask and softmax, as llama.cpp
  // caps kq. The probabilities a cache observes are the capped ones.
  float softcap = 0.0f;
  // Prefill (several queries) with bfloat16 products
  // (attn::Kernels::prefill_tile_bf16; vdpbf16ps where the CPU has it, at
  // twice the f32 FMA rate), an option of the fast mode
  // (Evaluator::set_bf16_attention). Decode and observed probabilities stay f32.
  bool bf16 = false;
  // Decode (one query token) scores of Q8 / Q4 / Q2 keys against an int8
  // query quantized per key group, and of KIVI's K2 keys against the query
  // times each token block's steps quantized per 32 elements, integer dot
  // products where the path has them (attention_q8.h; llama.cpp's way with
  // a quantized K cache), an option of the fast mode
  // (Evaluator::set_q8_query). Prefill, other keys and the V sums stay f32.
  bool q8_query = false;
};

// Buffers reused across steps; grow only when a step needs more.
struct AttentionScratch {
  // Instruction-set path of the kernels: KVBENCH_CPU or the best this CPU
  // runs. A path must be supported (cpu_path_supported) when set by hand.
  // Head sizes the path's vectors do not divide use the next narrower path.
  CpuPath path = default_cpu_path();
  // On the AVX-512 path, bf16 prefill by vdpbf16ps where the CPU has it;
  // false: the f32-FMA emulation every path runs (tests compare the two).
  bool native_bf16 = true;

  struct Head {
    int32_t n = 0;
    int32_t piece0 = 0, n_pieces = 0;  // its pieces: pieces[piece0, piece0 + n_pieces)
  };
  std::vector<Head> heads;                    // [n_kv_heads]
  std::vector<attn::Rows> piece_k, piece_v;   // every head's pieces, head by head
  std::vector<int32_t> piece_offset;          // first view index of each piece
  std::vector<const int32_t*> piece_pos;      // [rows] positions of each piece's rows
  std::vector<std::vector<float>> k_decoded;  // per KV head: [n][head_dim] when read via keys()
  std::vector<std::vector<float>> v_decoded;
  std::vector<std::vector<float>> work;         // per thread: kernel work buffers
  std::vector<float> partials;                  // decode: [unit][group][head_dim + 2]
  std::vector<int32_t> unit_head;               // decode: a unit's KV head
  std::vector<int32_t> unit_piece, unit_begin;  // decode: a unit's piece and first row
  std::vector<int64_t> unit_cost;               // prefill: visible key tiles per unit
  std::vector<int32_t> order;                   // prefill: units, heaviest first
  std::vector<float> packed_keys;               // prefill: per KV head [tiles][head_dim][64]
  std::vector<int64_t> head_tile0;              // prefill: first tile of each KV head
  std::vector<attn::KeyTile> tiles;             // prefill: every head's key tiles
  std::vector<int32_t> tile_piece;              // prefill: the piece of each key tile
  std::vector<float> probs;                     // observed probability rows
  std::vector<float> row_scale;                 // decode: 1 / sum of each observed row
  std::vector<float> group_sums;                // decode: per head [n], probs summed over the group
  // Decode calls so far: with the KV head, tags each block's query
  // (attn::DecodeBlock::q8_tag) so the int8 query is made once per thread
  // and head, not once per block.
  uint64_t decode_calls = 0;
};

// Whether AttentionShape::bf16 runs vdpbf16ps along `path` on this CPU (the
// AVX-512 path on a CPU whose CPUID reports AVX-512 BF16). Elsewhere the same
// numbers come from f32 FMAs on the rounded values, at about f32 speed.
bool bf16_attention_native(CpuPath path);

// Whether decode with AttentionShape::q8_query sums the int8 query's
// products with keys of element `keys` as integers on `path` at this head
// size: `group` is the keys' parameter group (Q8 / Q4 / Q2) or block of
// tokens (KIVI's K2), and the answer is that of the kernels attend() picks
// for a layer of such rows (attn::Kernels::q8_int_sums), read in place.
// False for keys it does not score against an int8 query (f32, f16, bf16)
// and where the path, head size or group leaves the sums to f32 products
// (the same numbers, slower). bench's backend column says which.
bool q8_query_integer(CpuPath path, KvElement keys, int head_dim, int group);

// q:   [n_tokens][n_heads][head_dim]  (rotated)
// out: [n_tokens][n_heads][head_dim]
// positions: [n_tokens] of the queries.
void attend(const AttentionShape& shape, int layer, const float* q,
            std::span<const int32_t> positions, KvCache& cache, float* out, ThreadPool& pool,
            AttentionScratch& scratch);

// The naive reference: every score row materialized, softmax and weighted
// sum in double, K/V read through the generic keys()/values() accessors, one
// thread. Reports probabilities to the cache exactly like attend(). For tests
// and benchmarks.
void attend_naive(const AttentionShape& shape, int layer, const float* q,
                  std::span<const int32_t> positions, KvCache& cache, float* out);

}  // namespace kvbench
