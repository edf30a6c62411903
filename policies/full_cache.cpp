#include "policies/full_cache.h"

#include <cassert>

#include "model/error.h"

namespace kvbench {

FullCache::FullCache(const KvShape& shape)
    : shape_(shape), k_(shape.n_layers * shape.n_kv_heads), v_(shape.n_layers * shape.n_kv_heads) {}

void FullCache::clear() {
  for (auto& b : k_) b.clear();
  for (auto& b : v_) b.clear();
  positions_.clear();
}

void FullCache::begin_step(const StepInfo& info) {
  if (info.seq != 0)
    throw InputError("the full cache holds one sequence (id 0); got sequence " +
                     std::to_string(info.seq));
  seq_ = info.seq;
  step_positions_.assign(info.positions.begin(), info.positions.end());
  view_positions_ = positions_;
  view_positions_.insert(view_positions_.end(), step_positions_.begin(), step_positions_.end());
}

void FullCache::append(int layer, const float* k, const float* v) {
  const int hd = shape_.head_dim;
  const int64_t n_new = static_cast<int64_t>(step_positions_.size());
  for (int h = 0; h < shape_.n_kv_heads; ++h) {
    auto& kb = k_[layer * shape_.n_kv_heads + h];
    auto& vb = v_[layer * shape_.n_kv_heads + h];
    // Input rows are [token][kv_head][head_dim]; storage is per head.
    for (int64_t t = 0; t < n_new; ++t) {
      const int64_t off = (t * shape_.n_kv_heads + h) * hd;
      kb.insert(kb.end(), k + off, k + off + hd);
      vb.insert(vb.end(), v + off, v + off + hd);
    }
  }
}

const KvHeadView& FullCache::view(int layer, int kv_head) {
  const auto& kb = k_[layer * shape_.n_kv_heads + kv_head];
  const auto& vb = v_[layer * shape_.n_kv_heads + kv_head];
  view_.hd = shape_.head_dim;
  view_.n = static_cast<int32_t>(kb.size() / shape_.head_dim);
  assert(view_.n == static_cast<int32_t>(view_positions_.size()));
  view_.pos = view_positions_.data();
  view_.k = kb.data();
  view_.v = vb.data();
  return view_;
}

void FullCache::end_step() {
  positions_.insert(positions_.end(), step_positions_.begin(), step_positions_.end());
  step_positions_.clear();
}

uint64_t FullCache::kv_bytes() const {
  uint64_t floats = 0;
  for (const auto& b : k_) floats += b.size();
  for (const auto& b : v_) floats += b.size();
  return floats * sizeof(float);
}

}  // namespace kvbench
