// The `full` scorer (policies/registry.cpp has its row and parameters).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "policies/policy_spec.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

class FullScorer final : public Scorer {
 public:
  std::string_view name() const override { return "full"; }
  bool evicts() const override { return false; }
  int32_t budget(int64_t) const override { return INT32_MAX; }
  void priorities(const ScoreInput& in, float* out) const override {
    std::fill(out, out + in.n, kKeep);
  }
};

}  // namespace

std::shared_ptr<const Scorer> make_full_scorer(const ComponentSpec&) {
  return std::make_shared<FullScorer>();
}

}  // namespace kvbench
