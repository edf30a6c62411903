// The `knorm` scorer (policies/registry.cpp has its row and parameters).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "policies/scorers/budget_scorer.h"

namespace kvbench {
namespace {

// Key norm: keys of low L2 norm draw attention (Devoto et al. 2024), so the
// lowest norms are kept.
class KnormScorer final : public BudgetScorer {
 public:
  using BudgetScorer::BudgetScorer;
  std::string_view name() const override { return "knorm"; }
  ScorerNeeds needs() const override { return {.key_norm = true}; }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i)
      out[i] = -in.stats[int64_t{i} * in.layout.n + in.layout.norm];
  }
};

}  // namespace

std::shared_ptr<const Scorer> make_knorm_scorer(const ComponentSpec& s) {
  return std::make_shared<KnormScorer>(s);
}

}  // namespace kvbench
