// The `quest` scorer (policies/registry.cpp has its row and parameters).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "policies/policy_spec.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

// Quest (Tang et al., 2024): nothing is lost. After the prompt (or after
// every chunk with timing=stream) every token but the newest page moves to
// the cold tier in pages carrying per-channel key min / max; each step's
// queries attend the `budget` tokens of pages with the highest bound on
// q.k, plus the newest page. The first `dense` layers stay whole.
class QuestScorer final : public Scorer {
 public:
  explicit QuestScorer(const ComponentSpec& spec)
      : budget_(spec.get_budget("budget")),
        page_(static_cast<int>(spec.get_int("page"))),
        dense_(static_cast<int>(spec.get_int("dense"))),
        timing_(spec.get("timing") == "stream" ? Timing::Stream : Timing::Once) {}
  std::string_view name() const override { return "quest"; }
  Timing timing() const override { return timing_; }
  // The hot tier keeps the newest page (Quest always attends the current page).
  int32_t budget(int64_t) const override { return page_; }
  int page() const override { return page_; }
  int32_t restore_budget(int64_t context_tokens) const override {
    return static_cast<int32_t>(std::min<int64_t>(budget_.tokens(context_tokens), INT32_MAX));
  }
  int dense_layers() const override { return dense_; }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) out[i] = static_cast<float>(in.src[i]);
  }

 private:
  Budget budget_;
  int page_;
  int dense_;
  Timing timing_;
};

}  // namespace

std::shared_ptr<const Scorer> make_quest_scorer(const ComponentSpec& s) {
  return std::make_shared<QuestScorer>(s);
}

}  // namespace kvbench
