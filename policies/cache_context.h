// What a cache is made for: the model's KV shape and RoPE, its
// sliding-window layers, the context a ratio budget refers to, and what a
// full cache others branch from must collect.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/ops/kv_cache.h"
#include "model/ops/rope.h"

namespace kvbench {

// The model's attention output projection (o_proj) as f32, per layer: what a
// value row becomes in the residual stream. CriticalKV's projected value
// norm reads it; the harness supplies it from the model's weights (each
// layer dequantized on first use, then kept: 4 x dim x n_q_heads x head_dim
// bytes per layer read).
class OutputProjection {
 public:
  virtual ~OutputProjection() = default;
  // [dim][n_q_heads * head_dim] row-major: output o reads query head q's
  // channel c at column q * head_dim + c.
  virtual const float* layer(int l) const = 0;
  virtual int64_t dim() const = 0;  // the model's hidden size
};

struct CacheContext {
  KvShape shape;
  RopeConfig rope;  // the model's RoPE (shifts re-rotate stored keys with it)
  // Models with sliding-window layers (Gemma 3), as llama.cpp's ISWA cache:
  // [n_layers] a layer's native window W (0: a global layer); after each step
  // a local layer keeps only the positions (p - W, p] of the step's last
  // position p, whatever the policy. Empty: every layer is global.
  std::vector<int32_t> layer_window;
  RopeConfig rope_local;       // the local layers' RoPE (when layer_window is set)
  int64_t context_tokens = 0;  // the context a ratio budget refers to
  uint64_t seed = 0;           // random scorer's default seed
  // The model's attention, for parts that recompute what it pays an entry
  // (offload's restore by importance): scores are q . k * attn_scale (0:
  // 1 / sqrt(head_dim)), then attn_softcap * tanh(score / attn_softcap) when
  // attn_softcap > 0 (Gemma 2). A snapshot does not carry them
  // (PolicyCache::adopt_model).
  float attn_scale = 0.0f;
  float attn_softcap = 0.0f;
  // The output projection, for parts that weigh values by it (null when the
  // cache was made without a model: a snapshot read on its own).
  std::shared_ptr<const OutputProjection> output_projection;
  // For a `full` cache that other policies branch from (import_from):
  bool collect_attention = false;  // keep attention statistics (h2o, hybrid, tova can resume)
  int keep_queries = 0;            // keep the last N queries per layer (snapkv's window)
  // >= 0: keep the queries' statistics (policies/query_stats.h) leaving out
  // positions below it, so expected attention with that skip can branch.
  int query_stats_skip = -1;
};

}  // namespace kvbench
