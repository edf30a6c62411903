// BudgetScorer: the budget, timing and interval every evicting scorer
// shares (the spec's `budget`, `timing`, `every`).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "policies/policy_spec.h"
#include "policies/scorer.h"

namespace kvbench {

class BudgetScorer : public Scorer {
 public:
  explicit BudgetScorer(const ComponentSpec& spec) : budget_(spec.get_budget("budget")) {
    if (spec.has("timing")) {
      const std::string t = spec.get("timing");
      timing_ = t == "once"    ? Timing::Once
                : t == "every" ? Timing::Every
                : t == "call"  ? Timing::Call
                               : Timing::Stream;
      every_ = static_cast<int>(spec.get_int("every"));
    }
  }
  int32_t budget(int64_t context_tokens) const override {
    return static_cast<int32_t>(std::min<int64_t>(budget_.tokens(context_tokens), INT32_MAX));
  }
  Timing timing() const override { return timing_; }
  int every() const override { return every_; }

 protected:
  Budget budget_;
  Timing timing_ = Timing::Stream;
  int every_ = 1;
};

}  // namespace kvbench
