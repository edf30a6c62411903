// The full, unbounded cache: every appended row is kept, in append order, for
// one sequence, as f32 (the reference) or f16 (as llama.cpp's default KV
// type). The baseline every policy is measured against.
#pragma once

#include <cstdint>
#include <vector>

#include "model/ops/kv_cache.h"

namespace kvbench {

class FullCache final : public KvCache {
 public:
  // element: precision of the stored K/V rows (F32 or F16; f16 rounds to
  // nearest even on append).
  explicit FullCache(const KvShape& shape, KvElement element = KvElement::F32);

  const KvShape& shape() const override { return shape_; }
  void begin_step(const StepInfo& info) override;
  void append(int layer, const float* k, const float* v) override;
  const KvHeadView& view(int layer, int kv_head) override;
  void end_step() override;

  void clear();
  // Keeps the first n_tokens committed tokens and drops the rest (a rollback,
  // e.g. to re-run a benchmark from the same context). n_tokens <= n_tokens().
  void truncate(int32_t n_tokens);
  // Allocates room for n_tokens tokens up front, so steps up to that length
  // never reallocate.
  void reserve(int32_t n_tokens);
  int32_t n_tokens() const { return static_cast<int32_t>(positions_.size()); }
  KvElement element() const { return element_; }
  // Exact bytes of K/V rows held:
  // n_layers x n_kv_heads x n_tokens x 2 x kv_row_bytes(element(), head_dim).
  uint64_t kv_bytes() const;

 private:
  class HeadView final : public KvHeadView {
   public:
    int32_t size() const override { return n; }
    const int32_t* positions() const override { return pos; }
    const float* keys(int32_t begin, int32_t count, float* scratch) const override;
    const float* values(int32_t begin, int32_t count, float* scratch) const override;
    std::span<const KvPiece> pieces() const override;
    KvPiece piece;  // set by pieces(): the whole view in place
    int32_t n = 0;
    int hd = 0;
    KvElement element = KvElement::F32;
    const int32_t* pos = nullptr;
    const uint8_t* k = nullptr;  // [n][hd] elements
    const uint8_t* v = nullptr;
  };

  KvShape shape_;
  KvElement element_;
  int64_t row_bytes_ = 0;  // head_dim * element bytes
  // Per layer and KV head, rows [n_tokens][head_dim] of element_. Cell
  // metadata (positions) is kept apart from the tensors and shared by all heads.
  std::vector<std::vector<uint8_t>> k_, v_;  // index layer * n_kv_heads + head
  std::vector<int32_t> positions_;           // committed tokens
  std::vector<int32_t> step_positions_;      // the open step's tokens
  std::vector<int32_t> view_positions_;      // committed + open step, for views
  int seq_ = 0;
  HeadView view_;
};

}  // namespace kvbench
