// The `knorm` scorer (its declaration at the end).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "policies/params.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

// Key norm: keys of low L2 norm draw attention (Devoto et al. 2024), so the
// lowest norms are kept.
class KnormScorer final : public Scorer {
 public:
  using Scorer::Scorer;
  ScorerNeeds needs() const override { return {.key_norm = true}; }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i)
      out[i] = -in.stats[int64_t{i} * in.layout.n + in.layout.norm];
  }
};

}  // namespace

ComponentInfo declare_knorm() {
  return scorer_component<KnormScorer>("knorm", "keeps the keys of lowest L2 norm (Devoto et al.)",
                                       scorer_params("stream"));
}

}  // namespace kvbench
