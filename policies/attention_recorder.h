// AttentionRecorder: the oracle's hindsight. Wraps a cache and records, per
// layer and KV head, the attention the steps run through it pay to each
// entry (summed over the group's query heads and the steps' queries);
// apply() hands those tables to a cache whose scorer needs().hindsight.
//
//   AttentionRecorder rec(*full_copy);      // the full cache after the prompt
//   teacher-force the gold answer through rec ...
//   rec.apply(*oracle_cache, n_prompt);     // before the oracle's prefill
//
// Entries are indexed by view position, which for the full cache is the
// stream index.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/ops/kv_cache.h"
#include "policies/policy_cache.h"

namespace kvbench {

class AttentionRecorder final : public KvCache {
 public:
  explicit AttentionRecorder(PolicyCache& inner);

  // --- KvCache: every call forwards to the wrapped cache; attention is
  // always requested (all queries) and recorded before it is passed on.
  const KvShape& shape() const override { return inner_.shape(); }
  void begin_step(const StepInfo& info) override { inner_.begin_step(info); }
  void append(int layer, const float* k, const float* v) override { inner_.append(layer, k, v); }
  const KvHeadView& view(int layer, int kv_head) override { return inner_.view(layer, kv_head); }
  AttentionRequest attention_request(int layer) const override;
  void observe(const AttentionRows& rows) override;
  void observe_queries(int layer, const float* q, std::span<const int32_t> positions) override {
    inner_.observe_queries(layer, q, positions);
  }
  void end_step() override { inner_.end_step(); }
  int32_t position_for(int seq, int32_t stream_pos) const override {
    return inner_.position_for(seq, stream_pos);
  }

  // [n_layers * n_kv_heads][n_sources]: the recorded attention to sources
  // [0, n_sources) (zero where none was paid).
  std::vector<std::vector<float>> tables(int64_t n_sources) const;

 private:
  PolicyCache& inner_;
  std::vector<std::vector<float>> importance_;  // [n_layers * n_kv_heads][entries seen]
};

// Gives `tables` (AttentionRecorder::tables) to a cache that needs them; a
// cache whose scorer needs no hindsight is left as it is.
void apply_hindsight(PolicyCache& cache, const std::vector<std::vector<float>>& tables);

}  // namespace kvbench
