// A head's view for a scorer under test, from arrays the test makes: keys,
// values, positions, optional query statistics and a window of queries.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "policies/query_stats.h"
#include "policies/query_window.h"
#include "policies/scorer.h"

namespace kvbench::test {

class FakeScoreContext final : public ScoreContext {
 public:
  // k, v: [entries][head_dim]; positions: [entries] (empty: none).
  FakeScoreContext(int head_dim, int group, std::vector<float> k, std::vector<float> v,
                   RopeConfig rope = {}, const QueryStats* stats = nullptr)
      : head_dim_(head_dim),
        group_(group),
        k_(std::move(k)),
        v_(std::move(v)),
        stats_(stats),
        rope_(std::move(rope)) {}
  void set_positions(std::vector<int32_t> pos) { pos_ = std::move(pos); }
  // The recent queries the scorer reads (SnapKV's window, ThinK's).
  QueryWindow& window() { return window_; }

  int32_t view_size() override { return static_cast<int32_t>(k_.size() / head_dim_); }
  const int32_t* view_positions() override { return pos_.empty() ? nullptr : pos_.data(); }
  const float* keys() override { return k_.data(); }
  const float* values() override { return v_.data(); }
  const QueryWindow& queries() const override { return window_; }
  const QueryStats* query_stats() const override { return stats_; }
  const RopeConfig& rope() const override { return rope_; }
  int group() const override { return group_; }
  int head_dim() const override { return head_dim_; }

 private:
  int head_dim_, group_;
  std::vector<float> k_, v_;
  std::vector<int32_t> pos_;
  const QueryStats* stats_;
  RopeConfig rope_;
  QueryWindow window_;
};

}  // namespace kvbench::test
