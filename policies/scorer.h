// A scorer decides which entries a KV head keeps: given the head's evictable
// entries visible to a sequence (stream index, position, statistics the cache
// collected for it), it writes a keep-priority per entry (higher = keep;
// +inf = never evict while the budget allows). The cache keeps the `keep`
// entries of highest priority (ties: the more recent entry) and evicts the
// rest. Scorers are immutable and shared between clones of a cache.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/ops/kv_cache.h"
#include "model/ops/rope.h"
#include "policies/policy_spec.h"
#include "policies/query_stats.h"
#include "policies/query_window.h"

namespace kvbench {

// When maintenance runs.
enum class Timing {
  Stream,  // after every prefill chunk and decode step: never above budget
  Once,    // once, at end_prefill(); decode then grows without eviction
  Every,   // at end_prefill() and every N decode steps
  Call,    // the seed's FixedSizeDynamicCache: after each forward call with that
           // call's attention; the prompt (question included) is one call, so
           // at end_prefill(), then after every decode step
};

// Where per-entry statistics live in an entry's stats row ([n_stats] floats).
// -1 = not collected.
struct StatLayout {
  int acc = -1;   // attention received, summed over every observed query (and group heads)
  int last = -1;  // attention received from the last observed query
  int norm = -1;  // L2 norm of the key at append time
  int n = 0;
};

// What a scorer needs the cache to collect; anything not needed costs nothing.
struct ScorerNeeds {
  bool attention = false;        // acc / last statistics from observed attention
  bool last_query_only = false;  // observe only each step's last query (TOVA)
  bool key_norm = false;
  int window_queries = 0;  // keep the last N queries per layer (SnapKV's window)
  // Importance supplied by the caller (PolicyCache::set_importance): the
  // attention the answer pays in a full-cache run (the oracle's hindsight;
  // policies/attention_recorder.h records it).
  bool hindsight = false;
  // Running mean and covariance of each query head's queries before RoPE
  // (policies/query_stats.h), leaving out positions < query_stats_skip.
  bool query_stats = false;
  int query_stats_skip = 0;
  // Scores from a reconstruction pass the caller runs once the prompt is in
  // and before end_prefill (KVzip's context reconstruction;
  // policies/reconstruction.h): the prompt after its template head is
  // teacher-forced back through the cache in chunks of reconstruction_chunk
  // tokens, and each entry's table (PolicyCache::set_importance, read as
  // ScoreInput::importance) is the most attention any row of the pass pays
  // it. The first reconstruction_sinks entries join every pass's softmax.
  bool reconstruction = false;
  int reconstruction_chunk = 2048;
  int reconstruction_sinks = 4;
};

// What a scorer may read beyond ScoreInput's arrays, fetched only when it
// asks (the cache decodes keys and values on demand, once per call).
class ScoreContext {
 public:
  virtual ~ScoreContext() = default;
  // Every entry the sequence sees in this head, the candidates first (entry
  // i < ScoreInput::n is candidate i): how many, their rotary positions, and
  // K/V rows [view_size()][head_dim()] (keys rotated at their positions).
  virtual int32_t view_size() = 0;
  virtual const int32_t* view_positions() = 0;
  virtual const float* keys() = 0;
  virtual const float* values() = 0;
  // The layer's recent queries (at least needs().window_queries of them
  // when available), every query head: this head's group is query heads
  // [kv_head * group(), (kv_head + 1) * group()).
  virtual const QueryWindow& queries() const = 0;
  // The layer's query statistics when needs().query_stats (else null).
  virtual const QueryStats* query_stats() const = 0;
  // The layer's RoPE (how keys were rotated; where future queries will be):
  // on a model with sliding-window layers, the local layers have their own.
  virtual const RopeConfig& rope() const = 0;
  virtual int group() const = 0;  // query heads per KV head
  virtual int head_dim() const = 0;
};

struct ScoreInput {
  int layer = 0;
  int kv_head = 0;
  int32_t n = 0;                 // entries
  const int32_t* src = nullptr;  // [n] stream index (arrival order; larger = newer)
  const int32_t* pos = nullptr;  // [n] rotary positions
  const float* stats = nullptr;  // [n][layout.n]
  StatLayout layout;
  // [n] needs().hindsight or reconstruction: supplied importance (0 when none)
  const float* importance = nullptr;
  int64_t now = 0;   // stream index of the next token
  int32_t keep = 0;  // how many entries this head keeps
  uint64_t seed = 0;
  bool decode = false;              // the last step was a decode step (false at end_prefill)
  ScoreContext* context = nullptr;  // K/V rows, recent queries (set by PolicyCache)
};

// One value merge between a head's candidates: the value row of candidate
// `to` (kept) gains `weight` x the value row of candidate `from` (evicted).
struct ValueMerge {
  int32_t from = 0, to = 0;
  float weight = 0.0f;
};

// A scorer in kvpress's shape: a name, what it needs the cache to collect,
// its budget and the entries it reserves, and priorities(). Everything else
// a policy does is a part (policies/part.h) that a spec composes: paging and
// restore, dense layers, heads that keep everything, one token set per
// layer, value merging, contiguous positions, precision by importance.
class Scorer {
 public:
  static constexpr float kKeep = std::numeric_limits<float>::infinity();

  // Reads the spec's `budget`, `timing` and `every` where the component
  // declares them (a scorer without `timing` maintains after every step
  // unless its constructor says otherwise).
  explicit Scorer(const ComponentSpec& spec);
  virtual ~Scorer() = default;

  std::string_view name() const { return name_; }
  Timing timing() const { return timing_; }
  int every() const { return every_; }     // decode steps between maintenance (Timing::Every)
  bool evicts() const { return evicts_; }  // false: the scorer never evicts (full)
  // The spec's `budget` as given (tokens or a ratio): a part that counts in
  // other units than entries (ChunkKV's chunks) reads it.
  const Budget& budget_setting() const { return budget_; }

  virtual ScorerNeeds needs() const { return {}; }
  // Budget per KV head for a context of `context_tokens` (ratio budgets):
  // the spec's `budget`.
  virtual int32_t budget(int64_t context_tokens) const;
  // Entries of the budget the scorer always protects (recent window, sinks);
  // PyramidKV's schedule spreads only the rest across layers.
  virtual int32_t reserved(int32_t budget) const { return 0; }
  // out: [in.n] keep-priorities.
  virtual void priorities(const ScoreInput& in, float* out) const = 0;
  // Whether priorities() reads in.keep (a share of the keep count protected,
  // as h2o's recent half). Such a scorer's budgets cannot share one scoring
  // (policies/priority_memo.h); every other scorer's priorities must not
  // depend on the budget, which tests/test_policy_start.cpp checks for every
  // spec the registry builds.
  virtual bool priorities_read_keep() const { return false; }

 protected:
  std::string name_;
  Budget budget_;
  Timing timing_ = Timing::Stream;
  int every_ = 1;
  bool evicts_ = true;
};

// Helpers shared by scorers.
// Marks the `count` newest entries (largest src) with +inf.
void protect_newest(const ScoreInput& in, int32_t count, float* out);
// Marks the `count` oldest entries (smallest src) with +inf.
void protect_oldest(const ScoreInput& in, int32_t count, float* out);
// StreamingLLM's order: the `sinks` oldest entries protected, the rest by
// recency (streaming, duo's streaming heads, cam).
void sinks_then_recent(const ScoreInput& in, int32_t sinks, float* out);

}  // namespace kvbench
