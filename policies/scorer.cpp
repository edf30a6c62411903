#include "policies/scorer.h"

#include <algorithm>
#include <climits>

namespace kvbench {

Scorer::Scorer(const ComponentSpec& spec) : name_(spec.name) {
  if (spec.has("budget")) budget_ = spec.get_budget("budget");
  if (spec.has("timing")) {
    const std::string t = spec.get("timing");
    timing_ = t == "once"    ? Timing::Once
              : t == "every" ? Timing::Every
              : t == "call"  ? Timing::Call
                             : Timing::Stream;
  }
  if (spec.has("every")) every_ = static_cast<int>(spec.get_int("every"));
}

int32_t Scorer::budget(int64_t context_tokens) const {
  return static_cast<int32_t>(std::min<int64_t>(budget_.tokens(context_tokens), INT32_MAX));
}

}  // namespace kvbench
