// The `streaming` scorer (policies/registry.cpp has its row and parameters).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "policies/scorers/budget_scorer.h"

namespace kvbench {
namespace {

// StreamingLLM: the oldest `sinks` entries are attention sinks, never evicted.
class StreamingScorer final : public BudgetScorer {
 public:
  explicit StreamingScorer(const ComponentSpec& spec)
      : BudgetScorer(spec),
        sinks_(static_cast<int32_t>(spec.get_int("sinks"))),
        contiguous_(spec.get("pos") == "contiguous") {}
  std::string_view name() const override { return "streaming"; }
  int32_t reserved(int32_t budget) const override { return std::min(sinks_, budget); }
  bool contiguous_positions() const override { return contiguous_; }
  void priorities(const ScoreInput& in, float* out) const override {
    sinks_then_recent(in, sinks_, out);
  }

 private:
  int32_t sinks_;
  bool contiguous_;
};

}  // namespace

std::shared_ptr<const Scorer> make_streaming_scorer(const ComponentSpec& s) {
  return std::make_shared<StreamingScorer>(s);
}

}  // namespace kvbench
