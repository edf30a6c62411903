#include "policies/full_cache.h"

#include <cassert>
#include <cstring>

#include "model/common/error.h"
#include "model/ops/attention_f16.h"

namespace kvbench {

FullCache::FullCache(const KvShape& shape, KvElement element)
    : shape_(shape),
      element_(element),
      row_bytes_(kv_row_bytes(element, shape.head_dim, shape.head_dim)),
      k_(shape.n_layers * shape.n_kv_heads),
      v_(shape.n_layers * shape.n_kv_heads) {
  assert(element == KvElement::F32 || element == KvElement::F16);
}

void FullCache::clear() {
  for (auto& b : k_) b.clear();
  for (auto& b : v_) b.clear();
  positions_.clear();
}

void FullCache::truncate(int32_t n_tokens) {
  assert(n_tokens >= 0 && n_tokens <= this->n_tokens() && step_positions_.empty());
  for (auto& b : k_) b.resize(n_tokens * row_bytes_);
  for (auto& b : v_) b.resize(n_tokens * row_bytes_);
  positions_.resize(n_tokens);
}

void FullCache::reserve(int32_t n_tokens) {
  for (auto& b : k_) b.reserve(n_tokens * row_bytes_);
  for (auto& b : v_) b.reserve(n_tokens * row_bytes_);
  positions_.reserve(n_tokens);
  view_positions_.reserve(n_tokens);
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
    const size_t old = kb.size();
    kb.resize(old + n_new * row_bytes_);
    vb.resize(old + n_new * row_bytes_);
    // Input rows are [token][kv_head][head_dim]; storage is per head.
    for (int64_t t = 0; t < n_new; ++t) {
      const int64_t off = (t * shape_.n_kv_heads + h) * hd;
      uint8_t* kd = kb.data() + old + t * row_bytes_;
      uint8_t* vd = vb.data() + old + t * row_bytes_;
      if (element_ == KvElement::F32) {
        std::memcpy(kd, k + off, row_bytes_);
        std::memcpy(vd, v + off, row_bytes_);
      } else {
        f32_to_f16_row(k + off, reinterpret_cast<uint16_t*>(kd), hd);
        f32_to_f16_row(v + off, reinterpret_cast<uint16_t*>(vd), hd);
      }
    }
  }
}

const KvHeadView& FullCache::view(int layer, int kv_head) {
  const auto& kb = k_[layer * shape_.n_kv_heads + kv_head];
  const auto& vb = v_[layer * shape_.n_kv_heads + kv_head];
  view_.hd = shape_.head_dim;
  view_.element = element_;
  view_.n = static_cast<int32_t>(kb.size() / row_bytes_);
  assert(view_.n == static_cast<int32_t>(view_positions_.size()));
  view_.pos = view_positions_.data();
  view_.k = kb.data();
  view_.v = vb.data();
  view_.piece.offset = 0;
  view_.piece.count = view_.n;
  view_.piece.k = {element_, view_.k, row_bytes_};
  view_.piece.v = {element_, view_.v, row_bytes_};
  return view_;
}

void FullCache::end_step() {
  positions_.insert(positions_.end(), step_positions_.begin(), step_positions_.end());
  step_positions_.clear();
}

uint64_t FullCache::kv_bytes() const {
  uint64_t bytes = 0;
  for (const auto& b : k_) bytes += b.size();
  for (const auto& b : v_) bytes += b.size();
  return bytes;
}

namespace {

// Rows [begin, begin + count) of `base` as f32: a pointer into storage for
// f32, else converted into scratch.
const float* rows_as_f32(const uint8_t* base, KvElement element, int hd, int32_t begin,
                         int32_t count, float* scratch) {
  if (element == KvElement::F32) return reinterpret_cast<const float*>(base) + int64_t{begin} * hd;
  f16_to_f32_row(reinterpret_cast<const uint16_t*>(base) + int64_t{begin} * hd, scratch,
                 int64_t{count} * hd);
  return scratch;
}

}  // namespace

const float* FullCache::HeadView::keys(int32_t begin, int32_t count, float* scratch) const {
  return rows_as_f32(k, element, hd, begin, count, scratch);
}

const float* FullCache::HeadView::values(int32_t begin, int32_t count, float* scratch) const {
  return rows_as_f32(v, element, hd, begin, count, scratch);
}

std::span<const KvPiece> FullCache::HeadView::pieces() const {
  if (n == 0) return {};
  return {&piece, 1};
}

}  // namespace kvbench
