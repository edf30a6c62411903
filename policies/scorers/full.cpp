// The `full` scorer (its declaration at the end): every entry, never evicted.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "policies/params.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

class FullScorer final : public Scorer {
 public:
  explicit FullScorer(const ComponentSpec& spec) : Scorer(spec) { evicts_ = false; }
  int32_t budget(int64_t) const override { return INT32_MAX; }
  void priorities(const ScoreInput& in, float* out) const override {
    std::fill(out, out + in.n, kKeep);
  }
};

}  // namespace

ComponentInfo declare_full() {
  return scorer_component<FullScorer>(
      "full", "keeps every entry: the reference every policy is measured against", {});
}

}  // namespace kvbench
