// A part of a policy: whatever a policy does besides scoring entries, as a
// piece a spec composes (kvpress's presses that wrap a scorer press). The
// scorer says which entries matter (policies/scorer.h); parts change what the
// cache does with that: page what is evicted and restore it (offload, Quest),
// keep some layers or heads whole (Quest's dense layers, DuoAttention's
// retrieval heads), keep one token set per layer (TOVA), fold evicted values
// into kept ones (CaM) or into a summary entry (+merge), renumber positions
// (StreamingLLM), keep the most important entries at full precision (mixed).
//
// A component declares the parts it brings (ComponentInfo::make_parts,
// policies/registry.h): an extra is a part; a scorer may bring parts with
// it (quest = its scorer + paging + dense layers). PolicyCache::create makes
// a cache's parts once (they may read the cache's context, e.g. a ratio
// budget) and calls them at fixed points; parts are immutable afterwards and
// shared by clones. Each hook has a default that does nothing, so a part
// overrides only the points it acts at.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "policies/cache_context.h"
#include "policies/cache_store.h"
#include "policies/policy_spec.h"
#include "policies/priority_memo.h"
#include "policies/query_window.h"
#include "policies/scorer.h"

namespace kvbench {

class Allocator;

// What PolicyCache::create assembles, handed to every part's configure():
// the store's configuration and the budgets per KV head.
struct CacheSetup {
  const PolicySpec& spec;
  const CacheContext& ctx;
  const Scorer& scorer;
  const Allocator& allocator;
  StoreConfig& store;
  // Per KV head: what maintenance evicts down to (global / local layers).
  int32_t& main_budget;
  int32_t& main_budget_local;
  // The context a local layer's full cache holds (its window, or the context
  // when shorter; 0 without local layers).
  int64_t local_context = 0;
  int32_t local_window = 0;  // the longest native window (0: none)
};

// A layer's first scoring in a Branch start that shares a PriorityMemo
// (policies/priority_memo.h): where a part keeps or finds a per-entry figure
// that does not depend on the budget. memo null: compute as usual.
struct MemoSlot {
  PriorityMemo* memo = nullptr;
  const std::string* family = nullptr;
  int64_t now = 0;
  uint64_t seed = 0;
  // A reused row's compute time is added to both: the cache's memo time and
  // its policy time (charged as if computed).
  std::atomic<int64_t>* reused_ns = nullptr;
  std::atomic<int64_t>* policy_ns = nullptr;
  void charge(double seconds) const {
    const auto ns = static_cast<int64_t>(seconds * 1e9);
    *reused_ns += ns;
    *policy_ns += ns;
  }
};

// A layer's maintenance, as the parts see it (PolicyCache's scratch).
struct LayerWork {
  int seq = 0;
  int layer = 0;
  std::vector<Candidates>& cand;          // [n_kv_heads] the heads' candidates
  std::vector<std::vector<float>>& prio;  // [n_kv_heads][candidates] keep-priorities
  // Scratch the parts may use (kept by the cache: hot loops allocate nothing).
  std::vector<std::pair<int32_t, float>>& pairs;
  std::vector<std::vector<std::pair<int32_t, float>>>& head_pairs;
  std::vector<int32_t>& order;
  std::vector<EntryRef>& refs;
  // [n_kv_heads] each head's view for scoring (its candidates' K/V, the
  // layer's queries), the same the scorer read; valid until the layer's
  // first eviction (combine, before_evictions, allocate).
  std::span<ScoreContext* const> contexts;
  // The model's output projection (CacheContext::output_projection), null
  // when the cache has none.
  const OutputProjection* projection = nullptr;
  // Each head's top-priority entries the allocator guaranteed
  // (Allocator::guaranteed; at most a head's keep count).
  int32_t guaranteed = 0;
  MemoSlot memo;
};

// One head's eviction, as the parts see it: the candidates, their
// priorities, and `order` whose first `drop` indices are the evicted
// candidates (in position order).
struct HeadEviction {
  int seq = 0;
  int layer = 0;
  int kv_head = 0;
  const Candidates& cand;
  std::span<const int32_t> order;
  int32_t drop = 0;
  // The scorer's view of the head's candidates (its context unset).
  const ScoreInput& input;
  CacheStore& store;
};

// The end of a prompt (end_prefill), one layer, after its maintenance.
struct PromptEnd {
  int seq = 0;
  int layer = 0;
  const QueryWindow& queries;  // the layer's kept queries, the prompt's last ones newest
  CacheStore& store;
  bool paused = false;  // eviction is paused (a question added whole): compress nothing
};

// Restore-time state the paging part reads.
struct RestoreStep {
  int seq = 0;
  int layer = 0;
  const float* q = nullptr;  // [n_queries][n_q_heads * head_dim]
  int64_t n_queries = 0;
  bool decode = false;
  int64_t decode_steps = 0;
  CacheStore& store;
  // The model's attention (CacheContext::attn_scale, attn_softcap).
  float attn_scale = 0.0f;
  float attn_softcap = 0.0f;
};

class Part {
 public:
  virtual ~Part() = default;

  // --- when the cache is made
  // Adjusts the store's configuration and the budgets; InputError when the
  // part cannot work with the rest of the policy or the model's shape.
  virtual void configure(CacheSetup& setup) const {}
  // Hot entries per KV head on top of the eviction budget (restored pages,
  // the summary entry), for a global / local layer.
  virtual int32_t extra_hot(bool local_layer) const { return 0; }
  // Queries per layer the part needs kept (restore bounds pages with the
  // prompt's last one).
  virtual int queries_kept() const { return 0; }

  // --- what the policy acts on
  // false: the policy never compresses `layer` (Quest's dense layers).
  virtual bool acts_on(int layer) const { return true; }
  // true: the head keeps every entry whatever the budget (DuoAttention's
  // retrieval heads); its entries never count as over budget.
  virtual bool keeps_all(int layer, int kv_head) const { return false; }
  // true: the part moves budget between heads by their priorities, which
  // heads that keep everything would upset (adakv).
  virtual bool uses_priorities_across_heads() const { return false; }

  // --- a layer's maintenance, in this order
  // true: maintenance must run at every step for this part even when
  // nothing is evicted (mixed demotes entries to its lower precision).
  virtual bool maintains_without_eviction() const { return false; }
  // Every head has its priorities (TOVA sums them over the layer's heads).
  virtual void combine(LayerWork& work) const {}
  // The layer's priorities are final, before any eviction.
  virtual void before_evictions(LayerWork& work) const {}
  // The allocator's keep count per head is set (heads that keep everything
  // keep everything): a part may change the counts and the priorities
  // (ChunkKV keeps whole chunks, however many tokens they hold).
  virtual void allocate(LayerWork& work, std::span<int32_t> keep) const {}
  // One head: its evicted candidates are chosen but still in place (CaM
  // folds their values into kept entries).
  virtual void before_eviction(const HeadEviction& e) const {}
  // One head: the evicted candidates are gone (StreamingLLM renumbers).
  virtual void after_eviction(const HeadEviction& e) const {}
  // Every head has been evicted (or nothing was: `evicted` false).
  virtual void after_evictions(LayerWork& work, bool evicted, CacheStore& store) const {}

  // --- the end of a prompt
  // Every layer the policy acts on, once the prompt is in and maintenance
  // has run (ThinK prunes the prompt's key channels), before restore.
  virtual void after_prompt(const PromptEnd& e) const {}

  // --- restore (paging)
  // The step's queries are known for a layer (before it attends): restore
  // the cold pages they need.
  virtual void on_queries(const RestoreStep& step) const {}
  // After the prompt's eviction: restore for the prompt's last query.
  virtual void after_prefill(const RestoreStep& step) const {}
  // Bytes read per decode step to rank cold pages (roofline).
  virtual double restore_bytes_per_step(const CacheStore& store) const { return 0.0; }

  // --- positions
  // true: the part renumbers a sequence's positions (contiguous), so the
  // next token's position is one past the cache's last, and entries
  // cannot be shared between sequences.
  virtual bool renumbers_positions() const { return false; }
  // true: maintenance changes kept entries' values (CaM).
  virtual bool changes_values() const { return false; }
  // true: the part zeroes channels of kept entries' keys (ThinK).
  virtual bool changes_keys() const { return false; }
};

using PartList = std::vector<std::shared_ptr<const Part>>;

}  // namespace kvbench
