#include "policies/query_window.h"

#include <algorithm>
#include <string>

namespace kvbench {

QueryWindow::QueryWindow(int n_layers, int capacity, int64_t query_dim)
    : capacity_(capacity), query_dim_(query_dim), rings_(n_layers) {
  for (Ring& r : rings_) {
    r.q.assign(static_cast<size_t>(capacity) * query_dim, 0.0f);
    r.pos.assign(capacity, 0);
  }
}

void QueryWindow::begin(int seq) {
  if (seq == seq_) return;
  clear();
  seq_ = seq;
}

void QueryWindow::clear() {
  for (Ring& r : rings_) r.count = r.next = 0;
}

void QueryWindow::push(int layer, const float* q, std::span<const int32_t> positions) {
  Ring& r = rings_[layer];
  const int64_t n = static_cast<int64_t>(positions.size());
  for (int64_t i = std::max<int64_t>(0, n - capacity_); i < n; ++i) {
    std::copy(q + i * query_dim_, q + (i + 1) * query_dim_, r.q.begin() + r.next * query_dim_);
    r.pos[r.next] = positions[i];
    r.next = (r.next + 1) % capacity_;
    r.count = std::min(r.count + 1, capacity_);
  }
}

const float* QueryWindow::last(int layer) const {
  const Ring& r = rings_[layer];
  if (r.count == 0) return nullptr;
  const int last = (r.next + capacity_ - 1) % capacity_;
  return r.q.data() + int64_t{last} * query_dim_;
}

void QueryWindow::take_newest(const QueryWindow& from) {
  for (size_t l = 0; l < rings_.size() && capacity_ > 0; ++l) {
    Ring& d = rings_[l];
    d.count = d.next = 0;
    const int have = from.count(static_cast<int>(l));
    const int take = std::min(have, capacity_);
    for (int i = have - take; i < have; ++i) {
      const float* q = from.query(static_cast<int>(l), i);
      std::copy(q, q + query_dim_, d.q.begin() + d.next * query_dim_);
      d.pos[d.next] = from.position(static_cast<int>(l), i);
      d.next = (d.next + 1) % capacity_;
      ++d.count;
    }
  }
  seq_ = from.seq_;
}

uint64_t QueryWindow::bytes() const {
  uint64_t b = 0;
  for (const Ring& r : rings_) b += r.q.size() * sizeof(float) + r.pos.size() * 4;
  return b;
}

void QueryWindow::save(StateWriter& out) const {
  out.i32(seq_);
  out.i32(capacity_);
  out.u64(rings_.size());
  for (const Ring& r : rings_) {
    out.i32(r.count);
    out.i32(r.next);
    out.array(r.q);
    out.array(r.pos);
  }
}

void QueryWindow::load(StateReader& in, int max_seqs) {
  seq_ = in.i32("query ring sequence");
  if (seq_ < -1 || seq_ >= max_seqs) in.fail("query ring sequence " + std::to_string(seq_));
  const int32_t cap = in.i32("query ring capacity");
  if (cap != capacity_)
    in.fail("query rings of " + std::to_string(cap) + " where the policy keeps " +
            std::to_string(capacity_));
  if (in.u64("query rings") != rings_.size()) in.fail("one query ring per layer expected");
  for (Ring& r : rings_) {
    r.count = in.i32("query ring fill");
    r.next = in.i32("query ring cursor");
    if (r.count < 0 || r.count > cap || r.next < 0 || r.next >= std::max(cap, 1))
      in.fail("query ring out of range");
    in.array(r.q, r.q.size(), "ring queries");
    in.array(r.pos, r.pos.size(), "ring positions");
    in.check_positions(r.pos, 0, "ring positions");
  }
}

}  // namespace kvbench
