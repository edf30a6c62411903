// The `cam` scorer (its declaration at the end): Cache Merging, Zhang et al.
// 2024 (ICML, zyxxmu/cam). Eviction is StreamingLLM's: the first tokens
// (`start` share of the budget) and the most recent ones stay; what CaM adds,
// merging an evicted token's value into the kept ones that follow it, is
// the value-merge part (policies/parts/value_merge.h).
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "policies/params.h"
#include "policies/parts/value_merge.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

class CamScorer final : public Scorer {
 public:
  explicit CamScorer(const ComponentSpec& spec) : Scorer(spec), start_(spec.get_number("start")) {}
  ScorerNeeds needs() const override {
    ScorerNeeds n;
    n.attention = true;
    return n;
  }
  int32_t reserved(int32_t budget) const override { return start_tokens(budget); }
  bool priorities_read_keep() const override { return true; }
  void priorities(const ScoreInput& in, float* out) const override {
    sinks_then_recent(in, start_tokens(in.keep), out);
  }

 private:
  int32_t start_tokens(int32_t budget) const {
    return static_cast<int32_t>(std::lround(start_ * budget));
  }
  double start_;
};

// merge=off: the same eviction, nothing merged (the ablation's control).
std::vector<std::shared_ptr<const Part>> cam_parts(const ComponentSpec& s, const PartEnv&) {
  if (s.get("merge") != "on") return {};
  return {
      make_value_merge_part(static_cast<int32_t>(s.get_int("span")), s.get("during") == "decode")};
}

}  // namespace

ComponentInfo declare_cam() {
  // CaM's experiments: start and recent 10% of the prompt each.
  std::vector<ParamInfo> p = scorer_params(
      "stream",
      {{"start", ParamType::Number, "0.5",
        "share of the budget held by the first tokens (the rest: the most recent)", 0, 1},
       {"span", ParamType::Int, "16",
        "kept tokens after an evicted one that share its value when it merges", 1, 1e6},
       {"merge",
        ParamType::Choice,
        "on",
        "off: the same eviction without merging (the control CaM is measured against)",
        0,
        0,
        {"on", "off"}},
       {"during",
        ParamType::Choice,
        "all",
        "which evictions merge: all, or only those of decode steps (the prompt's dropped plainly)",
        0,
        0,
        {"all", "decode"}}});
  p[0].default_value = "0.2";
  ComponentInfo c = scorer_component<CamScorer>(
      "cam",
      "CaM cache merging: StreamingLLM eviction (first + recent tokens); an evicted token's "
      "value is spread over the next `span` kept values with probability its attention / "
      "theirs",
      std::move(p));
  c.make_parts = cam_parts;
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "span=3";
  return c;
}

}  // namespace kvbench
