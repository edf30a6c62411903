// PolicyCache: a KV cache driven by a policy spec (policy_spec.h) — the one
// class the harness creates for every policy, `full` included.
//
//   auto cache = PolicyCache::create(parse_policy_spec("h2o:budget=512+int8"), ctx);
//   prefill chunks (evaluator.step) ... cache->end_prefill(); decode steps ...
//
// Maintenance (scoring, eviction, demotion, offload, merge) runs after steps
// according to the scorer's timing; with timing=stream, after every prefill
// chunk and decode step each KV head holds at most its budget of hot entries
// (plus, during the step, the step's own tokens). Observation costs nothing
// unless the policy needs it.
//
// Sequences (llama.cpp semantics): ids 0..63; [p0, p1) ranges with -1 as an
// open end; seq_rm with seq = -1 removes from every sequence. Several
// sequences share entries (seq_cp copies nothing). Errors: SequenceError
// (bad ids, unknown sequences, positions beyond int32 or negative other than
// -1, reversed ranges; a step's position, or one seq_add would make, outside
// [0, kMaxPosition] of positions.h), UnsupportedOperation (shifting shared entries, or
// entries whose keys are quantized and cannot be re-rotated); both are
// InputErrors. Sequence operations must not be called inside a step.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/ops/kv_cache.h"
#include "model/ops/rope.h"
#include "policies/allocator.h"
#include "policies/cache_context.h"
#include "policies/cache_store.h"
#include "policies/clone_ptr.h"
#include "policies/memory_report.h"
#include "policies/part.h"
#include "policies/policy_spec.h"
#include "policies/query_stats.h"
#include "policies/query_window.h"
#include "policies/scorer.h"
#include "policies/state_io.h"

namespace kvbench {

class HeadContext;

class PolicyCache final : public KvCache {
 public:
  // Throws InputError for a spec the shapes cannot support (e.g. a group
  // that does not divide head_dim, a ratio budget without a context).
  static std::unique_ptr<PolicyCache> create(const PolicySpec& spec, const CacheContext& ctx);

  // --- KvCache
  const KvShape& shape() const override { return ctx_.shape; }
  void begin_step(const StepInfo& info) override;
  void append(int layer, const float* k, const float* v) override;
  const KvHeadView& view(int layer, int kv_head) override;
  AttentionRequest attention_request(int layer) const override;
  void observe(const AttentionRows& rows) override;
  // The store's statistics of distinct heads / key ranges are distinct memory.
  bool observe_concurrently() const override { return true; }
  void observe_queries(int layer, const float* q, std::span<const int32_t> positions) override;
  void end_step() override;

  // The prompt is in: once-after-prefill policies (snapkv, oracle, quest,
  // timing=once|every) evict now, and offload restores the best pages for
  // the prompt's last query. Applies to the sequence of the last step.
  void end_prefill();
  // Runs the policy's maintenance for `seq` now.
  void maintain(int seq);
  // While paused, maintenance evicts nothing (restore and precision changes
  // still run): a question added whole after a compressed document. A
  // caller's transient setting, not part of snapshots or checkpoints.
  void pause_eviction(bool paused) { eviction_paused_ = paused; }

  MemoryReport memory() const;
  // Bytes restore reads per decode step to rank the cold pages (their key
  // bounds, once every `every` steps); 0 without offload. For the roofline.
  double restore_bytes_per_step() const;
  // Time spent in the policy's calls (observation in decode runs on the
  // attention threads: their times add up).
  double policy_seconds() const { return policy_ns_.ns * 1e-9; }
  // Needle survival: is stream token `source_index` (0 = the first token
  // ever appended) still held, hot or cold, by this KV head?
  bool holds(int layer, int kv_head, int64_t source_index) const;
  // ... and in the set attention reads now: the hot tier, pages restored
  // for the last step's queries included (the cold tier excluded).
  bool attends(int layer, int kv_head, int64_t source_index) const {
    return store_->attends(layer, kv_head, source_index);
  }
  // The most hot KV bytes (K/V and scales) held at once during prefill:
  // each chunk's rows and restored pages before maintenance evicts (an
  // imported state counts as held). A metric like policy_seconds(): not
  // part of snapshots.
  uint64_t peak_prefill_kv_bytes() const { return peak_prefill_; }
  std::vector<int64_t> held_sources(int layer, int kv_head) const;  // sorted

  // --- sequences
  void clear();
  void seq_rm(int seq, int64_t p0, int64_t p1);
  // UnsupportedOperation for streaming with contiguous positions (it
  // renumbers a sequence's entries, so they cannot be shared).
  void seq_cp(int src, int dst, int64_t p0, int64_t p1);
  void seq_keep(int seq);
  void seq_add(int seq, int64_t p0, int64_t p1, int64_t delta);
  void seq_div(int seq, int64_t p0, int64_t p1, int64_t d);
  int32_t pos_min(int seq) const { return store_->pos_min(seq); }
  int32_t pos_max(int seq) const { return store_->pos_max(seq); }
  // Position of the next token of `seq`: one past the largest position held
  // or evicted (contiguous streaming: one past the cache's last position).
  int32_t next_position(int seq) const { return store_->next_position(seq); }
  // The rotary position of `seq`'s next token, whose position in the stream
  // is stream_pos: stream_pos itself, or next_position() for a policy that
  // renumbers its cache contiguously (StreamingLLM's position shift).
  int32_t position_for(int seq, int32_t stream_pos) const override {
    return renumbers_ ? next_position(seq) : stream_pos;
  }
  void compact();

  // --- sharing work
  std::unique_ptr<PolicyCache> clone() const;  // deep copy of the whole state
  // Starts this (empty) cache from a `full` f32 cache's state: every entry,
  // statistic and kept query, then the policy's streaming maintenance. For
  // after-prefill policies call end_prefill() next. Throws InputError when
  // the source is not `full`, or lacks what the policy needs (attention
  // statistics or queries: see CacheContext).
  void import_from(const PolicyCache& full);
  // Scorers that need().hindsight (the oracle): importance of stream tokens
  // [0, n) for one layer and KV head (e.g. the attention the answer paid in
  // a full-cache run: policies/attention_recorder.h).
  void set_importance(int layer, int kv_head, std::span<const float> by_source);
  bool needs_hindsight() const { return needs_.hindsight; }
  // Scorers that need().reconstruction (KVzip): the caller runs the pass
  // (policies/reconstruction.h) after the prompt and gives its tables with
  // set_importance before end_prefill; evicting without them is an InputError.
  bool needs_reconstruction() const { return needs_.reconstruction; }
  // Budgets of one family (specs alike but for the scorer's budget) that
  // branch from one shared prefill share their first scoring of each layer:
  // start_policy sets the memo for a Branch start's end_prefill and clears
  // it (null) after; policies/priority_memo.h says why that is exact.
  void share_priorities(PriorityMemo* memo);
  // Of policy_seconds(), the time the memo's rows took the cell that
  // computed them (a reusing cell is charged it, as if it had computed).
  double memo_seconds() const { return memo_ns_.ns * 1e-9; }

  // --- snapshots (policies/cache_state.cpp; the file format around them is
  // harness/snapshot/snapshot_file.h). The complete state: spec, context, every
  // entry of every tier with positions and sequence sets, statistics, query
  // rings, oracle importance, restored pages, KIVI blocks, counters — all a
  // cache needs to behave exactly as if it had never been saved (only the
  // policy's own wall time, policy_seconds(), starts again at 0).
  // InputError inside a step.
  void save_state(StateWriter& out) const;
  // A new cache from what save_state wrote: the spec and context are read
  // first and create() makes the cache, then every part is read into it and
  // checked against that configuration (counts, indices, sequence sets,
  // stream indices). Throws SnapshotError; nothing outside the new object is
  // touched, so a failed load leaves any live cache as it was.
  static std::unique_ptr<PolicyCache> load_state(StateReader& in);

  // --- checkpoints (policies/cache_checkpoint.h): answer on other
  // sequences, then return exactly to this state without copying K/V.
  class Checkpoint;
  Checkpoint checkpoint() const;
  // Removes every sequence the checkpoint did not know and restores the
  // rest. InputError when a checkpointed sequence was changed meanwhile.
  void rollback(const Checkpoint& cp);

  // --- introspection
  const PolicySpec& spec() const { return spec_; }
  const CacheContext& context() const { return ctx_; }
  // What a cache read from a snapshot does not carry, from the context of
  // the model the snapshot was checked against: its output projection and its
  // attention's scale and soft-cap (CacheContext).
  void adopt_model(const CacheContext& model) {
    ctx_.output_projection = model.output_projection;
    ctx_.attn_scale = model.attn_scale;
    ctx_.attn_softcap = model.attn_softcap;
  }
  const Scorer& scorer() const { return *scorer_; }
  int32_t budget() const { return budget_; }  // per KV head, including restored pages
  // A layer's native window (0: global; see CacheContext::layer_window).
  int32_t window(int layer) const {
    return ctx_.layer_window.empty() ? 0 : ctx_.layer_window[layer];
  }
  // Whether the policy compresses `layer` (its `layers` parameter, and the
  // dense first layers of Quest-like scorers).
  bool acts_on(int layer) const;
  // Hot entries a head of `layer` keeps after maintenance (policy-managed,
  // restored and summary entries together).
  int32_t layer_budget(int layer) const;
  // Policy-managed entries a head of `layer` holds before maintenance evicts
  // (INT32_MAX: never, e.g. a dense layer).
  int32_t evict_above(int layer) const;
  // Tokens a fresh cache of this policy takes in before its maintenance
  // first evicts anything: until then it holds exactly what a full cache
  // holds, which is what lets the runner share the full cache's prefill.
  int32_t first_eviction_tokens() const;
  // What a `full` cache must collect for import_from() into this policy.
  struct ImportNeeds {
    bool attention = false;     // CacheContext.collect_attention
    int queries = 0;            // CacheContext.keep_queries
    int query_stats_skip = -1;  // CacheContext.query_stats_skip (-1: none needed)
  };
  ImportNeeds import_needs() const;
  // What the spec's scorer asks the cache (and its caller) for, without
  // making a cache.
  static ScorerNeeds scorer_needs(const PolicySpec& spec);
  // True when a cache of this spec holds exactly what a full f32 cache holds
  // until its maintenance first evicts (lossless storage, no extra that acts
  // earlier): the condition for starting it from the full cache's prefill.
  static bool prefill_matches_full(const PolicySpec& spec);
  // Queries kept per layer: the scorer's window, what the parts need (one
  // for restoring pages at end_prefill), or CacheContext.keep_queries.
  static int query_ring_capacity(const PolicySpec& spec, const CacheContext& ctx);
  bool streaming() const { return scorer_->evicts() && scorer_->timing() == Timing::Stream; }
  // Whether maintenance changes kept entries' values (CaM folds evicted ones in).
  bool merges_values() const { return changes_values_; }
  // Whether the policy zeroes key channels of the prompt's entries (think).
  bool zeroes_key_channels() const { return changes_keys_; }
  // Whether the policy renumbers positions contiguously (StreamingLLM's
  // position shift): the next token's position is next_position().
  bool contiguous_positions() const { return renumbers_; }
  const CacheStore& store() const { return *store_; }

 private:
  PolicyCache() = default;
  // clone(): every member copied (the store through its clone(); the scorer
  // and allocator are immutable and shared).
  PolicyCache(const PolicyCache&) = default;
  // Budgets and the parts' configuration of the store (create).
  void configure(StoreConfig& sc);
  static int query_ring_capacity(const Scorer& scorer, const PartList& parts, int keep_queries);
  // A layer's maintenance (policy_maintenance.cpp): evict to its budget with
  // the scorer when `use_scorer`, and the parts' work at each point.
  void maintain_layer(int seq, int layer, bool use_scorer);
  // A cross-layer allocator's maintenance (Allocator::cross_layer): every
  // layer gathered and scored, one allocation, then each layer's evictions.
  void maintain_across_layers(int seq);
  // Entries kept over the acting layers' heads (those that keep everything
  // left out) when they hold `entries`: the budget per head summed, or for a
  // ratio b, kvpress's N - int(N (1 - b)) of the N the context fills.
  int64_t keep_across_layers(int64_t entries) const;
  bool within_budget(int seq, int layer, int32_t limit) const;
  bool gather_layer(int seq, int layer, int32_t limit);
  void score_layer(int seq, int layer, int32_t limit, bool use_scorer);
  void evict_layer(int seq, int layer);
  // The layer's heads' views for its scorer and parts: built into `views`
  // (which the caller keeps alive while they are used), listed in contexts_.
  void open_contexts(std::vector<HeadContext>& views, int seq, int layer);
  // The parts' view of the layer's maintenance, on this cache's scratch.
  LayerWork layer_work(int seq, int layer);
  void evict_head(int seq, int layer, int kv_head, int32_t keep);
  bool keeps_all(int layer, int kv_head) const;
  ScoreInput score_input(int layer, int kv_head, int32_t keep) const;
  // The memo slot of the layer's maintenance (empty unless its first
  // scoring runs under share_priorities).
  MemoSlot memo_slot(int layer);

  PolicySpec spec_;
  CacheContext ctx_;
  std::shared_ptr<const Scorer> scorer_;
  std::shared_ptr<const Allocator> allocator_;
  PartList parts_;  // immutable, shared by clones
  ClonePtr<CacheStore> store_;
  ScorerNeeds needs_;
  bool observe_attention_ = false;
  int32_t budget_ = 0;       // per head
  int32_t main_budget_ = 0;  // per head, without restored pages
  int32_t reserved_ = 0;
  enum class Layers { All, Global, Local } layers_ = Layers::All;
  // A ratio budget on a local layer is a ratio of what its full cache holds
  // (its window, when shorter than the context).
  int32_t main_budget_local_ = 0;
  int32_t main_budget_of(int layer) const {
    return window(layer) > 0 ? main_budget_local_ : main_budget_;
  }
  // What the parts do, asked once at create.
  bool renumbers_ = false;         // contiguous positions
  bool changes_values_ = false;    // value merging
  bool changes_keys_ = false;      // key channels zeroed
  bool maintains_always_ = false;  // maintenance at every step (mixed)
  int32_t step_last_pos_ = -1;     // the open step's largest position
  bool eviction_paused_ = false;
  bool step_decode_ = false;
  int64_t decode_steps_ = 0;
  QueryWindow window_;  // recent queries: SnapKV's window, restore's query, kept queries
  QueryStats qstats_;   // needs().query_stats: per-head query mean and covariance
  std::vector<std::vector<float>> importance_;  // [n_layers * n_kv_heads][source]
  // Atomic: observe() may run on several threads at once (their times add
  // up); copied by value with the rest of the cache.
  struct Nanoseconds {
    std::atomic<int64_t> ns = 0;
    Nanoseconds() = default;
    Nanoseconds(const Nanoseconds& o) : ns(o.ns.load()) {}
    Nanoseconds& operator=(const Nanoseconds& o) {
      ns = o.ns.load();
      return *this;
    }
  };
  Nanoseconds policy_ns_;
  // share_priorities: the memo, this spec's family key, the layers scored
  // at least once in this cache's life, and those whose first scoring ran
  // under the memo; the reused rows' compute time.
  PriorityMemo* memo_ = nullptr;
  std::string memo_family_;
  std::vector<char> scored_layers_, memo_layers_;
  Nanoseconds memo_ns_;
  std::vector<double> memo_scratch_;
  uint64_t peak_prefill_ = 0;
  void note_peak();
  // Scratch for maintenance, reused.
  std::vector<Candidates> cand_;
  std::vector<std::vector<float>> prio_;
  std::vector<float> gathered_;
  std::vector<int32_t> order_, keep_;
  std::vector<std::span<const float>> spans_;
  std::vector<EntryRef> refs_;
  std::vector<std::pair<int32_t, float>> pairs_;  // the parts' scratch (LayerWork)
  std::vector<std::vector<std::pair<int32_t, float>>> head_pairs_;
  std::vector<ScoreContext*> contexts_;  // the layer's heads' views during maintain_layer
  // maintain_across_layers: every layer's candidates and priorities at once
  // (emptied after each maintenance).
  std::vector<std::vector<Candidates>> layer_cand_;
  std::vector<std::vector<std::vector<float>>> layer_prio_;
};

class PolicyCache::Checkpoint {
 public:
  Checkpoint(Checkpoint&&) = default;
  Checkpoint& operator=(Checkpoint&&) = default;

 private:
  friend class PolicyCache;
  Checkpoint() = default;
  const PolicyCache* owner = nullptr;
  StoreCheckpoint store;
  QueryWindow window;
  QueryStats qstats;
  bool step_decode = false;
  int64_t decode_steps = 0;
};

}  // namespace kvbench
