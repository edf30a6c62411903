// The `tova` scorer (policies/registry.cpp has its row and parameters).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "policies/scorers/budget_scorer.h"

namespace kvbench {
namespace {

// TOVA: the attention of the current (last) query, averaged over the heads;
// the cache sums this over the layer's KV heads, so all heads keep one set.
class TovaScorer final : public BudgetScorer {
 public:
  using BudgetScorer::BudgetScorer;
  std::string_view name() const override { return "tova"; }
  ScorerNeeds needs() const override { return {.attention = true, .last_query_only = true}; }
  bool per_layer() const override { return true; }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) out[i] = in.stats[int64_t{i} * in.layout.n + in.layout.last];
  }
};

}  // namespace

std::shared_ptr<const Scorer> make_tova_scorer(const ComponentSpec& s) {
  return std::make_shared<TovaScorer>(s);
}

}  // namespace kvbench
