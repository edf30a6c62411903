// HeadContext: the scorer's lazy view of one head (ScoreContext,
// policies/scorer.h) over the cache store: K/V decoded only when asked, once.
#pragma once

#include <cstdint>
#include <vector>

#include "policies/cache_store.h"
#include "policies/query_stats.h"
#include "policies/query_window.h"
#include "policies/scorer.h"

namespace kvbench {

class HeadContext final : public ScoreContext {
 public:
  HeadContext(CacheStore& store, const QueryWindow& window, const QueryStats& stats, int seq,
              int layer, int kv_head)
      : store_(store),
        window_(window),
        stats_(stats),
        seq_(seq),
        layer_(layer),
        kv_head_(kv_head) {}
  int32_t view_size() override { return view().size(); }
  const int32_t* view_positions() override { return view().positions(); }
  const float* keys() override {
    if (!keys_) keys_ = view().keys(0, view().size(), rows(k_scratch_));
    return keys_;
  }
  const float* values() override {
    if (!values_) values_ = view().values(0, view().size(), rows(v_scratch_));
    return values_;
  }
  const QueryWindow& queries() const override { return window_; }
  const QueryStats* query_stats() const override { return stats_.enabled() ? &stats_ : nullptr; }
  const RopeConfig& rope() const override { return store_.rope_of(layer_); }
  int group() const override {
    return store_.config().shape.n_q_heads / store_.config().shape.n_kv_heads;
  }
  int head_dim() const override { return store_.config().shape.head_dim; }

 private:
  const KvHeadView& view() {
    if (!view_) view_ = &store_.view_for(seq_, layer_, kv_head_);
    return *view_;
  }
  float* rows(std::vector<float>& scratch) {
    scratch.resize(static_cast<size_t>(view().size()) * head_dim());
    return scratch.data();
  }
  CacheStore& store_;
  const QueryWindow& window_;
  const QueryStats& stats_;
  int seq_, layer_, kv_head_;
  const KvHeadView* view_ = nullptr;
  const float* keys_ = nullptr;
  const float* values_ = nullptr;
  std::vector<float> k_scratch_, v_scratch_;
};

}  // namespace kvbench
