// The `window` scorer (its declaration at the end).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "policies/params.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

// Sliding window: recency is the stream index.
class WindowScorer final : public Scorer {
 public:
  using Scorer::Scorer;
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) out[i] = static_cast<float>(in.src[i]);
  }
};

}  // namespace

ComponentInfo declare_window() {
  return scorer_component<WindowScorer>("window", "sliding window: the most recent `budget` tokens",
                                        scorer_params("stream"));
}

}  // namespace kvbench
