// The `oracle` scorer (its declaration at the end).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "policies/params.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

// Hindsight: importance per (layer, head, stream index) from a full-cache
// run, set on the cache by the harness (PolicyCache::set_importance).
class OracleScorer final : public Scorer {
 public:
  using Scorer::Scorer;
  ScorerNeeds needs() const override { return {.hindsight = true}; }
  void priorities(const ScoreInput& in, float* out) const override {
    std::copy(in.importance, in.importance + in.n, out);
  }
};

}  // namespace

ComponentInfo declare_oracle() {
  ComponentInfo c = scorer_component<OracleScorer>(
      "oracle",
      "hindsight upper bound: keeps what the answer attends to in a full-cache run (importance "
      "supplied by the harness)",
      scorer_params("once"));
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "timing=stream";
  return c;
}

}  // namespace kvbench
