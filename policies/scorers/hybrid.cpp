// The `hybrid` scorer (its declaration at the end).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "policies/params.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

// Attention share + recency share. The attention statistic is the mean
// attention per query the entry has seen, so old entries are not favoured
// merely for having been seen by more queries (H2O's sum favours them).
class HybridScorer final : public Scorer {
 public:
  explicit HybridScorer(const ComponentSpec& spec)
      : Scorer(spec), split_(spec.get_number("split")) {}
  ScorerNeeds needs() const override { return {.attention = true}; }
  int32_t reserved(int32_t budget) const override { return recent_count(budget); }
  bool priorities_read_keep() const override { return true; }
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

ComponentInfo declare_hybrid() {
  ComponentInfo c = scorer_component<HybridScorer>(
      "hybrid",
      "attention share (mean attention per query seen, which does not favour old tokens) + "
      "recency share",
      scorer_params("stream", {{"split", ParamType::Number, "0.7",
                                "share of the budget chosen by attention; the rest is the most "
                                "recent tokens",
                                0, 1}}));
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "split=0.5";
  return c;
}

}  // namespace kvbench
