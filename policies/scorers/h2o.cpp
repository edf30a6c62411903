// The `h2o` scorer (its declaration at the end).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "policies/params.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

// H2O: heavy hitters by attention accumulated over every query that saw the
// entry (summed over the KV head's query heads), plus the most recent tokens.
class H2oScorer final : public Scorer {
 public:
  explicit H2oScorer(const ComponentSpec& spec)
      : Scorer(spec), recent_(spec.get_number("recent")) {}
  ScorerNeeds needs() const override { return {.attention = true}; }
  int32_t reserved(int32_t budget) const override { return recent_count(budget); }
  bool priorities_read_keep() const override { return true; }
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

ComponentInfo declare_h2o() {
  return scorer_component<H2oScorer>(
      "h2o",
      "Heavy-Hitter Oracle: attention accumulated over every query so far + the most recent "
      "tokens",
      scorer_params("stream", {{"recent", ParamType::Number, "0.5",
                                "share of the budget kept for the most recent tokens", 0, 1}}));
}

}  // namespace kvbench
