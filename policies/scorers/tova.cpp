// The `tova` scorer (its declaration at the end).
#include <cstdint>
#include <memory>
#include <vector>

#include "model/common/error.h"
#include "policies/params.h"
#include "policies/parts/layer_sets.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

// TOVA: the attention of the current (last) query, averaged over the heads;
// its layer-sets part sums this over the layer's KV heads, so all heads keep
// one set.
class TovaScorer final : public Scorer {
 public:
  using Scorer::Scorer;
  ScorerNeeds needs() const override { return {.attention = true, .last_query_only = true}; }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) out[i] = in.stats[int64_t{i} * in.layout.n + in.layout.last];
  }
};

std::vector<std::shared_ptr<const Part>> tova_parts(const ComponentSpec&, const PartEnv&) {
  return {make_layer_sets_part()};
}

void check_tova(const PolicySpec& s, const ComponentSpec&) {
  if (s.allocator.name == "adakv")
    throw InputError("policy '" + to_string(s) +
                     "': tova keeps one token set per layer, adakv gives heads different budgets");
}

}  // namespace

ComponentInfo declare_tova() {
  ComponentInfo c = scorer_component<TovaScorer>(
      "tova",
      "TOVA: the current query's attention averaged over all heads; one token set per layer",
      scorer_params("stream"));
  c.make_parts = tova_parts;
  c.check = check_tova;
  return c;
}

}  // namespace kvbench
