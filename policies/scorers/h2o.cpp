// The `h2o` scorer (policies/registry.cpp has its row and parameters).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "policies/scorers/budget_scorer.h"

namespace kvbench {
namespace {

// H2O: heavy hitters by attention accumulated over every query that saw the
// entry (summed over the KV head's query heads), plus the most recent tokens.
class H2oScorer final : public BudgetScorer {
 public:
  explicit H2oScorer(const ComponentSpec& spec)
      : BudgetScorer(spec), recent_(spec.get_number("recent")) {}
  std::string_view name() const override { return "h2o"; }
  ScorerNeeds needs() const override { return {.attention = true}; }
  int32_t reserved(int32_t budget) const override { return recent_count(budget); }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) out[i] = in.stats[int64_t{i} * in.layout.n + in.layout.acc];
    protect_newest(in, recent_count(in.keep), out);
  }

 private:
  int32_t recent_count(int32_t keep) const {
    return static_cast<int32_t>(std::lround(recent_ * keep));
  }
  double recent_;
};

}  // namespace

std::shared_ptr<const Scorer> make_h2o_scorer(const ComponentSpec& s) {
  return std::make_shared<H2oScorer>(s);
}

}  // namespace kvbench
