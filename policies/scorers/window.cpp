// The `window` scorer (policies/registry.cpp has its row and parameters).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "policies/scorers/budget_scorer.h"

namespace kvbench {
namespace {

// Sliding window: recency is the stream index.
class WindowScorer final : public BudgetScorer {
 public:
  using BudgetScorer::BudgetScorer;
  std::string_view name() const override { return "window"; }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) out[i] = static_cast<float>(in.src[i]);
  }
};

}  // namespace

std::shared_ptr<const Scorer> make_window_scorer(const ComponentSpec& s) {
  return std::make_shared<WindowScorer>(s);
}

}  // namespace kvbench
