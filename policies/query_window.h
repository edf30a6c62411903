// QueryWindow: the last `capacity` queries of every layer (all query heads,
// rotated) of the sequence of the latest step. SnapKV's observation window,
// the query that picks cold pages at end_prefill, and a full cache's kept
// queries for the policies that import it all live here.
//
// A value type: a copy is the clone and the checkpoint; save/load write
// the snapshot's bytes for it (one place for all three).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "policies/state_io.h"

namespace kvbench {

class QueryWindow {
 public:
  QueryWindow() = default;
  // query_dim: n_q_heads * head_dim.
  QueryWindow(int n_layers, int capacity, int64_t query_dim);

  int capacity() const { return capacity_; }
  int64_t query_dim() const { return query_dim_; }
  int seq() const { return seq_; }  // the sequence the queries belong to (-1: none yet)

  // A step of `seq` begins: queries of another sequence are dropped.
  void begin(int seq);
  void clear();  // every layer empty (the sequence stays)
  // The step's queries q: [positions.size()][query_dim], rotated at positions.
  void push(int layer, const float* q, std::span<const int32_t> positions);

  int count(int layer) const { return rings_[layer].count; }
  // The i-th kept query of `layer`, oldest first (i < count): [query_dim].
  const float* query(int layer, int i) const {
    return rings_[layer].q.data() + slot(layer, i) * query_dim_;
  }
  int32_t position(int layer, int i) const { return rings_[layer].pos[slot(layer, i)]; }
  const float* last(int layer) const;  // the newest query, or null

  // Replaces every layer's queries by the newest ones of `from` (as many as
  // fit) and takes its sequence: a cache importing a full cache's state.
  void take_newest(const QueryWindow& from);
  uint64_t bytes() const;  // memory held

  void save(StateWriter& out) const;
  // Reads what save() wrote into this window, checked against its shape.
  void load(StateReader& in, int max_seqs);

 private:
  struct Ring {
    std::vector<float> q;      // [capacity][query_dim]
    std::vector<int32_t> pos;  // [capacity]
    int count = 0, next = 0;
  };
  int64_t slot(int layer, int i) const {
    const Ring& r = rings_[layer];
    return (r.next - r.count + i + capacity_) % capacity_;
  }
  int capacity_ = 0;
  int64_t query_dim_ = 0;
  int seq_ = -1;
  std::vector<Ring> rings_;  // [n_layers]
};

}  // namespace kvbench
