// The scorer of StreamingLLM's eviction: the first `sinks` entries are
// attention sinks, never evicted, and the rest of the budget goes to the
// most recent ones. `streaming` is this scorer; `duo` scores its streaming
// heads with it (its retrieval heads, in the heads part, are never over
// budget). What else each policy does is in its parts.
#pragma once

#include <algorithm>
#include <cstdint>

#include "policies/scorer.h"

namespace kvbench {

class SinksScorer final : public Scorer {
 public:
  explicit SinksScorer(const ComponentSpec& spec)
      : Scorer(spec), sinks_(static_cast<int32_t>(spec.get_int("sinks"))) {}
  int32_t reserved(int32_t budget) const override { return std::min(sinks_, budget); }
  void priorities(const ScoreInput& in, float* out) const override {
    sinks_then_recent(in, sinks_, out);
  }

 private:
  int32_t sinks_;
};

}  // namespace kvbench
