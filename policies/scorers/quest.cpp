// The `quest` scorer (its declaration at the end): Quest (Tang et al., 2024)
// is a scorer plus two parts. Nothing is lost: after the prompt (or after
// every chunk with timing=stream) every token but the newest page moves to
// the cold tier in pages carrying per-channel key min / max (the paging
// part); each step's queries attend the `budget` tokens of pages with the
// highest bound on q.k, plus the newest page. The first `dense` layers stay
// whole (the dense part).
#include <cstdint>
#include <memory>
#include <vector>

#include "model/common/error.h"
#include "policies/params.h"
#include "policies/parts/dense.h"
#include "policies/parts/paging.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

class QuestScorer final : public Scorer {
 public:
  explicit QuestScorer(const ComponentSpec& spec)
      : Scorer(spec), page_(static_cast<int>(spec.get_int("page"))) {}
  // The hot tier keeps the newest page (Quest always attends the current
  // page); the `budget` is the paging part's restore budget.
  int32_t budget(int64_t) const override { return page_; }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) out[i] = static_cast<float>(in.src[i]);
  }

 private:
  int page_;
};

std::vector<std::shared_ptr<const Part>> quest_parts(const ComponentSpec& s, const PartEnv& env) {
  PagingOptions o;
  o.page = static_cast<int>(s.get_int("page"));
  o.restore = s.get_budget("budget");
  return {make_paging_part(o, env), make_dense_part(static_cast<int>(s.get_int("dense")))};
}

void check_quest(const PolicySpec& s, const ComponentSpec&) {
  if (s.extra("offload"))
    throw InputError("policy '" + to_string(s) +
                     "': quest pages what it evicts itself; drop +offload");
}

}  // namespace

ComponentInfo declare_quest() {
  ComponentInfo c = scorer_component<QuestScorer>(
      "quest",
      "Quest: nothing evicted; every token but the newest page is paged with per-channel key "
      "min/max and each step's queries attend the pages of highest bound within `budget`",
      {{"budget", ParamType::Budget, "0.25",
        "tokens attended per KV head besides the newest page: tokens (512) or a ratio of the "
        "context (0.25; of its window on a local layer)"},
       {"page", ParamType::Int, "16", "tokens per page", 1, 4096},
       {"dense", ParamType::Int, "2", "first layers kept whole (not paged)", 0, 1e6},
       {"timing",
        ParamType::Choice,
        "once",
        "when to page: once (after prefill, which attends in full, as in the paper) or stream "
        "(after every chunk and step)",
        0,
        0,
        {"once", "stream"}},
       layers_param()});
  c.make_parts = quest_parts;
  c.check = check_quest;
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "page=4,dense=1";
  return c;
}

}  // namespace kvbench
