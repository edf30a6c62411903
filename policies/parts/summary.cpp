// The `merge` extra (the seed's include_skipped), as a part: what a head
// evicts is folded into one summary entry per sequence, the weighted mean of
// the evicted keys and values (weights: accumulated attention, or uniform).
// The summary entry takes one place of the eviction budget.
#include "policies/parts/summary.h"

#include <memory>
#include <vector>

namespace kvbench {
namespace {

class SummaryPart final : public Part {
 public:
  SummaryPart(bool by_attention, bool evicts) : by_attention_(by_attention), evicts_(evicts) {}
  void configure(CacheSetup& s) const override {
    s.store.merge = true;
    s.store.merge_by_attention = by_attention_;
    if (evicts_) {  // the summary entry
      s.main_budget -= 1;
      s.main_budget_local -= 1;
    }
  }
  int32_t extra_hot(bool) const override { return 1; }

 private:
  bool by_attention_, evicts_;
};

std::vector<std::shared_ptr<const Part>> merge_parts(const ComponentSpec& s, const PartEnv& env) {
  return {std::make_shared<SummaryPart>(s.get("weight") == "attention", env.scorer.evicts())};
}

}  // namespace

ComponentInfo declare_merge() {
  return extra_component(
      "merge",
      "evicted entries are folded into one summary entry per head (weighted mean of K "
      "and V; the seed's include_skipped)",
      {{"weight",
        ParamType::Choice,
        "attention",
        "weights of the mean: accumulated attention (when collected), or uniform",
        0,
        0,
        {"attention", "uniform"}}},
      merge_parts);
}

}  // namespace kvbench
