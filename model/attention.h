// Causal multi-head attention with grouped KV heads over the entries a cache
// shows for each KV head. Queries see the entries whose position is <= their
// own. Probabilities are handed to the cache only when it asks.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/kv_cache.h"
#include "model/thread_pool.h"

namespace kvbench {

struct AttentionShape {
  int n_heads = 0;     // query heads
  int n_kv_heads = 0;  // KV heads; query head h uses KV head h / (n_heads / n_kv_heads)
  int head_dim = 0;
};

// Buffers reused across steps; grow only when a step needs more.
struct AttentionScratch {
  std::vector<float> scores;                 // [n_heads][n_tokens][n_max]
  std::vector<std::vector<float>> k_decoded; // per KV head: [n][head_dim] when not stored as f32
  std::vector<std::vector<float>> v_decoded;
};

// q:   [n_tokens][n_heads][head_dim]  (rotated)
// out: [n_tokens][n_heads][head_dim]
// positions: [n_tokens] of the queries.
void attend(const AttentionShape& shape, int layer, const float* q,
            std::span<const int32_t> positions, KvCache& cache, float* out,
            ThreadPool& pool, AttentionScratch& scratch);

}  // namespace kvbench
