// The `hybrid` scorer (policies/registry.cpp has its row and parameters).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "policies/scorers/budget_scorer.h"

namespace kvbench {
namespace {

// Attention share + recency share. The attention statistic is the mean
// attention per query the entry has seen, so old entries are not favoured
// merely for having been seen by more queries (H2O's sum favours them).
class HybridScorer final : public BudgetScorer {
 public:
  explicit HybridScorer(const ComponentSpec& spec)
      : BudgetScorer(spec), split_(spec.get_number("split")) {}
  std::string_view name() const override { return "hybrid"; }
  ScorerNeeds needs() const override { return {.attention = true}; }
  int32_t reserved(int32_t budget) const override { return recent_count(budget); }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) {
      const double seen = std::max<int64_t>(1, in.now - in.src[i]);
      out[i] = static_cast<float>(in.stats[int64_t{i} * in.layout.n + in.layout.acc] / seen);
    }
    protect_newest(in, recent_count(in.keep), out);
  }

 private:
  int32_t recent_count(int32_t keep) const {
    return keep - static_cast<int32_t>(std::lround(split_ * keep));
  }
  double split_;
};

}  // namespace

std::shared_ptr<const Scorer> make_hybrid_scorer(const ComponentSpec& s) {
  return std::make_shared<HybridScorer>(s);
}

}  // namespace kvbench
