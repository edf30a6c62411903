// The full, unbounded cache: every appended row is kept at f32, in append
// order, for one sequence. The reference every policy is measured against.
#pragma once

#include <cstdint>
#include <vector>

#include "model/kv_cache.h"

namespace kvbench {

class FullCache final : public KvCache {
 public:
  explicit FullCache(const KvShape& shape);

  const KvShape& shape() const override { return shape_; }
  void begin_step(const StepInfo& info) override;
  void append(int layer, const float* k, const float* v) override;
  const KvHeadView& view(int layer, int kv_head) override;
  void end_step() override;

  void clear();
  int32_t n_tokens() const { return static_cast<int32_t>(positions_.size()); }
  // Exact bytes of K/V rows held: n_layers x n_kv_heads x head_dim x n_tokens x 2 x 4.
  uint64_t kv_bytes() const;

 private:
  class HeadView final : public KvHeadView {
   public:
    int32_t size() const override { return n; }
    const int32_t* positions() const override { return pos; }
    const float* keys(int32_t begin, int32_t, float*) const override { return k + int64_t{begin} * hd; }
    const float* values(int32_t begin, int32_t, float*) const override { return v + int64_t{begin} * hd; }
    int32_t n = 0;
    int hd = 0;
    const int32_t* pos = nullptr;
    const float* k = nullptr;
    const float* v = nullptr;
  };

  KvShape shape_;
  // Per layer and KV head, rows [n_tokens][head_dim]. Cell metadata
  // (positions) is kept apart from the tensors and shared by all heads.
  std::vector<std::vector<float>> k_, v_;  // index layer * n_kv_heads + head
  std::vector<int32_t> positions_;         // committed tokens
  std::vector<int32_t> step_positions_;    // the open step's tokens
  std::vector<int32_t> view_positions_;    // committed + open step, for views
  int seq_ = 0;
  HeadView view_;
};

}  // namespace kvbench
