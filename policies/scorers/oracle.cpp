// The `oracle` scorer (policies/registry.cpp has its row and parameters).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "policies/scorers/budget_scorer.h"

namespace kvbench {
namespace {

// Hindsight: importance per (layer, head, stream index) from a full-cache
// run, set on the cache by the harness (PolicyCache::set_importance).
class OracleScorer final : public BudgetScorer {
 public:
  using BudgetScorer::BudgetScorer;
  std::string_view name() const override { return "oracle"; }
  ScorerNeeds needs() const override { return {.hindsight = true}; }
  void priorities(const ScoreInput& in, float* out) const override {
    std::copy(in.importance, in.importance + in.n, out);
  }
};

}  // namespace

std::shared_ptr<const Scorer> make_oracle_scorer(const ComponentSpec& s) {
  return std::make_shared<OracleScorer>(s);
}

}  // namespace kvbench
