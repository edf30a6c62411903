// The `snapkv` scorer (policies/registry.cpp has its row and parameters).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "policies/scorers/budget_scorer.h"

namespace kvbench {
namespace {

// SnapKV: once after prefill. The cache computes, for every entry, the
// attention of the last `window` prompt queries summed over those queries
// and the KV head's query heads (`window_votes`). Votes are pooled over
// neighbouring positions (kernel k, zero padding; avg divides by k as
// avg_pool1d does), the window's own entries are kept, the rest of the
// budget goes to the highest pooled votes.
class SnapKvScorer final : public BudgetScorer {
 public:
  explicit SnapKvScorer(const ComponentSpec& spec)
      : BudgetScorer(spec),
        window_(static_cast<int32_t>(spec.get_int("window"))),
        kernel_(static_cast<int32_t>(spec.get_int("kernel"))),
        avg_(spec.get("pool") == "avg") {
    timing_ = Timing::Once;
  }
  std::string_view name() const override { return "snapkv"; }
  ScorerNeeds needs() const override { return {.window_queries = window_}; }
  int32_t reserved(int32_t budget) const override { return std::min(window_, budget); }
  void priorities(const ScoreInput& in, float* out) const override {
    // The window: the `window_` newest entries. The rest, in position order.
    static thread_local std::vector<int32_t> order;
    static thread_local std::vector<float> pooled;
    std::fill(out, out + in.n, 0.0f);
    protect_newest(in, window_, out);
    order.clear();
    for (int32_t i = 0; i < in.n; ++i)
      if (out[i] != kKeep) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return in.pos[a] != in.pos[b] ? in.pos[a] < in.pos[b] : in.src[a] < in.src[b];
    });
    const int32_t m = static_cast<int32_t>(order.size());
    const int32_t half = kernel_ / 2;
    pooled.assign(m, 0.0f);
    for (int32_t j = 0; j < m; ++j) {
      float acc = avg_ ? 0.0f : -std::numeric_limits<float>::infinity();
      for (int32_t t = std::max(0, j - half); t <= std::min(m - 1, j + half); ++t) {
        const float v = in.window_votes[order[t]];
        acc = avg_ ? acc + v : std::max(acc, v);
      }
      pooled[j] = avg_ ? acc / static_cast<float>(kernel_) : acc;
    }
    for (int32_t j = 0; j < m; ++j) out[order[j]] = pooled[j];
  }

 private:
  int32_t window_, kernel_;
  bool avg_;
};

}  // namespace

std::shared_ptr<const Scorer> make_snapkv_scorer(const ComponentSpec& s) {
  return std::make_shared<SnapKvScorer>(s);
}

}  // namespace kvbench
