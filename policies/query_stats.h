// QueryStats: per layer and query head, the running mean and covariance of
// the queries before RoPE (each observed query un-rotated at its position),
// for scorers that model the queries still to come (expected attention).
// Queries at positions < skip are left out: the attention sinks' queries are
// outliers (kvpress drops them the same way). Each layer is un-rotated with
// its own RoPE (a gemma3 local layer has another base than a global one).
//
// A value type: a copy is the clone and the checkpoint; save/load write its
// snapshot bytes. Memory: n_layers * n_q_heads * (head_dim + head_dim^2)
// doubles.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/ops/rope.h"
#include "policies/state_io.h"

namespace kvbench {

class QueryStats {
 public:
  QueryStats() = default;
  // Every layer rotated with `rope`.
  QueryStats(int n_layers, int n_q_heads, int head_dim, int skip, const RopeConfig& rope);
  // Layer l rotated with layer_rope[l].
  QueryStats(int n_q_heads, int head_dim, int skip, std::span<const RopeConfig> layer_rope);

  bool enabled() const { return !sum_.empty(); }
  int head_dim() const { return head_dim_; }
  int skip() const { return skip_; }
  int seq() const { return seq_; }

  // A step of `seq` begins: statistics of another sequence are dropped.
  void begin(int seq);
  void clear();
  // q: [positions.size()][n_q_heads * head_dim], rotated at positions.
  void add(int layer, const float* q, std::span<const int32_t> positions);

  int64_t count(int layer) const { return count_[layer]; }
  // The mean [head_dim] and the covariance [head_dim][head_dim] (divided by
  // the count, as a population covariance) of query head `head` of `layer`;
  // zeros when nothing was counted.
  void mean(int layer, int head, double* out) const;
  void covariance(int layer, int head, double* out) const;
  uint64_t bytes() const;

  void save(StateWriter& out) const;
  void load(StateReader& in, int max_seqs);  // checked against this object's shape

 private:
  int n_q_heads_ = 0, head_dim_ = 0, skip_ = 0, seq_ = -1;
  std::vector<std::vector<float>> inv_freq_;  // [n_layers][n_dims / 2]
  std::vector<uint8_t> neox_;                 // [n_layers] 1: NEOX pairing
  std::vector<int64_t> count_;                // [n_layers]
  std::vector<double> sum_;                   // [n_layers][n_q_heads][head_dim]
  std::vector<double> outer_;  // [n_layers][n_q_heads][head_dim][head_dim], upper triangle
  std::vector<double> rows_;   // scratch: un-rotated queries of one head, [n][head_dim]
  std::vector<float> one_;     // scratch: one query
};

}  // namespace kvbench
