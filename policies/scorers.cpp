// The registered scorers. Each is a keep-priority over a head's entries;
// the cache does the rest (budgets, eviction, storage, timing).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "policies/policy_spec.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

// Budget, timing and interval every evicting scorer shares.
class BudgetScorer : public Scorer {
 public:
  explicit BudgetScorer(const ComponentSpec& spec) : budget_(spec.get_budget("budget")) {
    if (spec.has("timing")) {
      const std::string t = spec.get("timing");
      timing_ = t == "once"    ? Timing::Once
                : t == "every" ? Timing::Every
                : t == "call"  ? Timing::Call
                               : Timing::Stream;
      every_ = static_cast<int>(spec.get_int("every"));
    }
  }
  int32_t budget(int64_t context_tokens) const override {
    return static_cast<int32_t>(std::min<int64_t>(budget_.tokens(context_tokens), INT32_MAX));
  }
  Timing timing() const override { return timing_; }
  int every() const override { return every_; }

 protected:
  Budget budget_;
  Timing timing_ = Timing::Stream;
  int every_ = 1;
};

class FullScorer final : public Scorer {
 public:
  std::string_view name() const override { return "full"; }
  bool evicts() const override { return false; }
  int32_t budget(int64_t) const override { return INT32_MAX; }
  void priorities(const ScoreInput& in, float* out) const override {
    std::fill(out, out + in.n, kKeep);
  }
};

// Sliding window: recency is the stream index.
class WindowScorer final : public BudgetScorer {
 public:
  using BudgetScorer::BudgetScorer;
  std::string_view name() const override { return "window"; }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) out[i] = static_cast<float>(in.src[i]);
  }
};

// StreamingLLM: the oldest `sinks` entries are attention sinks, never evicted.
class StreamingScorer final : public BudgetScorer {
 public:
  explicit StreamingScorer(const ComponentSpec& spec)
      : BudgetScorer(spec),
        sinks_(static_cast<int32_t>(spec.get_int("sinks"))),
        contiguous_(spec.get("pos") == "contiguous") {}
  std::string_view name() const override { return "streaming"; }
  int32_t reserved(int32_t budget) const override { return std::min(sinks_, budget); }
  bool contiguous_positions() const override { return contiguous_; }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) out[i] = static_cast<float>(in.src[i]);
    protect_oldest(in, sinks_, out);
  }

 private:
  int32_t sinks_;
  bool contiguous_;
};

// H2O: heavy hitters by attention accumulated over every query that saw the
// entry (summed over the KV head's query heads), plus the most recent tokens.
class H2oScorer final : public BudgetScorer {
 public:
  explicit H2oScorer(const ComponentSpec& spec)
      : BudgetScorer(spec), recent_(spec.get_number("recent")) {}
  std::string_view name() const override { return "h2o"; }
  ScorerNeeds needs() const override { return {.attention = true}; }
  int32_t reserved(int32_t budget) const override { return recent_count(budget); }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) out[i] = in.stats[int64_t{i} * in.layout.n + in.layout.acc];
    protect_newest(in, recent_count(in.keep), out);
  }

 private:
  int32_t recent_count(int32_t keep) const {
    return static_cast<int32_t>(std::lround(recent_ * keep));
  }
  double recent_;
};

// Attention share + recency share. The attention statistic is the mean
// attention per query the entry has seen, so old entries are not favoured
// merely for having been seen by more queries (H2O's sum favours them).
class HybridScorer final : public BudgetScorer {
 public:
  explicit HybridScorer(const ComponentSpec& spec)
      : BudgetScorer(spec), split_(spec.get_number("split")) {}
  std::string_view name() const override { return "hybrid"; }
  ScorerNeeds needs() const override { return {.attention = true}; }
  int32_t reserved(int32_t budget) const override { return recent_count(budget); }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) {
      const double seen = std::max<int64_t>(1, in.now - in.src[i]);
      out[i] = static_cast<float>(in.stats[int64_t{i} * in.layout.n + in.layout.acc] / seen);
    }
    protect_newest(in, recent_count(in.keep), out);
  }

 private:
  int32_t recent_count(int32_t keep) const {
    return keep - static_cast<int32_t>(std::lround(split_ * keep));
  }
  double split_;
};

// SnapKV: once after prefill. The cache computes, for every entry, the
// attention of the last `window` prompt queries summed over those queries
// and the KV head's query heads (`window_votes`). Votes are pooled over
// neighbouring positions (kernel k, zero padding; avg divides by k as
// avg_pool1d does), the window's own entries are kept, the rest of the
// budget goes to the highest pooled votes.
class SnapKvScorer final : public BudgetScorer {
 public:
  explicit SnapKvScorer(const ComponentSpec& spec)
      : BudgetScorer(spec),
        window_(static_cast<int32_t>(spec.get_int("window"))),
        kernel_(static_cast<int32_t>(spec.get_int("kernel"))),
        avg_(spec.get("pool") == "avg") {
    timing_ = Timing::Once;
  }
  std::string_view name() const override { return "snapkv"; }
  ScorerNeeds needs() const override { return {.window_queries = window_}; }
  int32_t reserved(int32_t budget) const override { return std::min(window_, budget); }
  void priorities(const ScoreInput& in, float* out) const override {
    // The window: the `window_` newest entries. The rest, in position order.
    static thread_local std::vector<int32_t> order;
    static thread_local std::vector<float> pooled;
    std::fill(out, out + in.n, 0.0f);
    protect_newest(in, window_, out);
    order.clear();
    for (int32_t i = 0; i < in.n; ++i)
      if (out[i] != kKeep) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return in.pos[a] != in.pos[b] ? in.pos[a] < in.pos[b] : in.src[a] < in.src[b];
    });
    const int32_t m = static_cast<int32_t>(order.size());
    const int32_t half = kernel_ / 2;
    pooled.assign(m, 0.0f);
    for (int32_t j = 0; j < m; ++j) {
      float acc = avg_ ? 0.0f : -std::numeric_limits<float>::infinity();
      for (int32_t t = std::max(0, j - half); t <= std::min(m - 1, j + half); ++t) {
        const float v = in.window_votes[order[t]];
        acc = avg_ ? acc + v : std::max(acc, v);
      }
      pooled[j] = avg_ ? acc / static_cast<float>(kernel_) : acc;
    }
    for (int32_t j = 0; j < m; ++j) out[order[j]] = pooled[j];
  }

 private:
  int32_t window_, kernel_;
  bool avg_;
};

// TOVA: the attention of the current (last) query, averaged over the heads;
// the cache sums this over the layer's KV heads, so all heads keep one set.
class TovaScorer final : public BudgetScorer {
 public:
  using BudgetScorer::BudgetScorer;
  std::string_view name() const override { return "tova"; }
  ScorerNeeds needs() const override { return {.attention = true, .last_query_only = true}; }
  bool per_layer() const override { return true; }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i) out[i] = in.stats[int64_t{i} * in.layout.n + in.layout.last];
  }
};

// Key norm: keys of low L2 norm draw attention (Devoto et al. 2024), so the
// lowest norms are kept.
class KnormScorer final : public BudgetScorer {
 public:
  using BudgetScorer::BudgetScorer;
  std::string_view name() const override { return "knorm"; }
  ScorerNeeds needs() const override { return {.key_norm = true}; }
  void priorities(const ScoreInput& in, float* out) const override {
    for (int32_t i = 0; i < in.n; ++i)
      out[i] = -in.stats[int64_t{i} * in.layout.n + in.layout.norm];
  }
};

// A control: a seeded hash of (seed, layer, head, stream index), so an
// entry's fate does not depend on when maintenance runs.
class RandomScorer final : public BudgetScorer {
 public:
  explicit RandomScorer(const ComponentSpec& spec)
      : BudgetScorer(spec), seed_(static_cast<uint64_t>(spec.get_int("seed"))) {}
  std::string_view name() const override { return "random"; }
  void priorities(const ScoreInput& in, float* out) const override {
    const uint64_t seed = seed_ != 0 ? seed_ : in.seed;
    for (int32_t i = 0; i < in.n; ++i) {
      uint64_t z = seed * 0x9E3779B97F4A7C15ull + (static_cast<uint64_t>(in.layer) << 48) +
                   (static_cast<uint64_t>(in.kv_head) << 32) + static_cast<uint32_t>(in.src[i]);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      out[i] = static_cast<float>(z >> 40) * 0x1.0p-24f;
    }
  }

 private:
  uint64_t seed_;
};

// Hindsight: importance per (layer, head, stream index) from a full-cache
// run, set on the cache by the harness (PolicyCache::set_importance).
class OracleScorer final : public BudgetScorer {
 public:
  using BudgetScorer::BudgetScorer;
  std::string_view name() const override { return "oracle"; }
  ScorerNeeds needs() const override { return {.hindsight = true}; }
  void priorities(const ScoreInput& in, float* out) const override {
    std::copy(in.importance, in.importance + in.n, out);
  }
};

// The threshold src of the `count` newest / oldest entries, by nth_element
// on a reused buffer.
void protect_by_src(const ScoreInput& in, int32_t count, float* out, bool newest) {
  if (count <= 0) return;
  if (count >= in.n) {
    std::fill(out, out + in.n, Scorer::kKeep);
    return;
  }
  static thread_local std::vector<int32_t> srcs;
  srcs.assign(in.src, in.src + in.n);
  int32_t threshold;
  if (newest) {
    std::nth_element(srcs.begin(), srcs.begin() + (in.n - count), srcs.end());
    threshold = srcs[in.n - count];
    for (int32_t i = 0; i < in.n; ++i)
      if (in.src[i] >= threshold) out[i] = Scorer::kKeep;
  } else {
    std::nth_element(srcs.begin(), srcs.begin() + (count - 1), srcs.end());
    threshold = srcs[count - 1];
    for (int32_t i = 0; i < in.n; ++i)
      if (in.src[i] <= threshold) out[i] = Scorer::kKeep;
  }
}

}  // namespace

void protect_newest(const ScoreInput& in, int32_t count, float* out) {
  protect_by_src(in, count, out, true);
}
void protect_oldest(const ScoreInput& in, int32_t count, float* out) {
  protect_by_src(in, count, out, false);
}

std::shared_ptr<const Scorer> make_full_scorer(const ComponentSpec&) {
  return std::make_shared<FullScorer>();
}
std::shared_ptr<const Scorer> make_window_scorer(const ComponentSpec& s) {
  return std::make_shared<WindowScorer>(s);
}
std::shared_ptr<const Scorer> make_streaming_scorer(const ComponentSpec& s) {
  return std::make_shared<StreamingScorer>(s);
}
std::shared_ptr<const Scorer> make_h2o_scorer(const ComponentSpec& s) {
  return std::make_shared<H2oScorer>(s);
}
std::shared_ptr<const Scorer> make_hybrid_scorer(const ComponentSpec& s) {
  return std::make_shared<HybridScorer>(s);
}
std::shared_ptr<const Scorer> make_snapkv_scorer(const ComponentSpec& s) {
  return std::make_shared<SnapKvScorer>(s);
}
std::shared_ptr<const Scorer> make_tova_scorer(const ComponentSpec& s) {
  return std::make_shared<TovaScorer>(s);
}
std::shared_ptr<const Scorer> make_knorm_scorer(const ComponentSpec& s) {
  return std::make_shared<KnormScorer>(s);
}
std::shared_ptr<const Scorer> make_random_scorer(const ComponentSpec& s) {
  return std::make_shared<RandomScorer>(s);
}
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

std::shared_ptr<const Scorer> make_quest_scorer(const ComponentSpec& s) {
  return std::make_shared<QuestScorer>(s);
}
std::shared_ptr<const Scorer> make_oracle_scorer(const ComponentSpec& s) {
  return std::make_shared<OracleScorer>(s);
}

}  // namespace kvbench
