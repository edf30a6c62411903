// The cache store: per layer and KV head, the entries (K, V, position,
// stream index, sequence set, precision, tier) of every sequence, the
// sequence operations, views, observation statistics and exact memory
// accounting. Policies (policy_cache.h) decide; the store holds and moves.
//
// Per head, entries live in up to four segments, concatenated in this order
// in a view:
//   main      the policy-managed entries in the storage precision
//             (f32 / f16 / bf16 / int8 / int4 rows, or KIVI)
//   incoming  f32 rows: the open step's rows for int8 / int4 storage
//             (encoded into main at end_step, so a step attends over its own
//             rows at full precision, as KIVI's prefill does), or `mixed`'s
//             full-precision entries
//   restored  cold pages restored for the current query (offload): the
//             segment points at the cold tier's rows (no copy) until
//             something would move them (compact, dropping the oldest pages,
//             clone, checkpoint), which copies them first
//   summary   one merged entry per sequence standing for evicted ones (merge)
// Sequences share entries through each entry's sequence set: seq_cp adds a
// bit, nothing is copied. An entry is freed when its set becomes empty.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/ops/kv_cache.h"
#include "model/ops/rope.h"
#include "policies/cache_checkpoint.h"
#include "policies/clone_ptr.h"
#include "policies/cold_tier.h"
#include "policies/memory_report.h"
#include "policies/positions.h"
#include "policies/scorer.h"
#include "policies/segment.h"

namespace kvbench {

enum SegmentSlot : int { kMain = 0, kIncoming = 1, kRestored = 2, kSummary = 3, kSlots = 4 };

struct StoreConfig {
  KvShape shape;
  RopeConfig rope;
  // Models with sliding-window (local) layers (Gemma 3): [n_layers] a layer's
  // native window (0: global), and the local layers' RoPE. Empty: all global.
  std::vector<int32_t> layer_window;
  RopeConfig rope_local;
  enum class Layout { Rows, Mixed, Kivi } layout = Layout::Rows;
  RowCodec codec;  // Rows: the storage codec; Mixed: the codec of the less important entries
  int kivi_group = 32;
  int kivi_residual = 128;
  KiviKeys kivi_keys = KiviKeys::Channel;
  KiviValues kivi_values = KiviValues::Token;
  StatLayout stats;  // per-entry statistics
  bool offload = false;
  int page = 16;
  int64_t cold_capacity = 0;  // entries per KV head in the cold tier; 0: unbounded
  int cold_stats = 0;         // statistics per cold entry (restore by importance: 2)
  bool file_tier = false;
  std::string dir = "/tmp";
  bool merge = false;
  bool merge_by_attention = true;
};

struct EntryRef {
  int8_t seg = 0;
  int32_t idx = 0;
};

// A head's policy-managed entries (main, incoming) visible to one sequence,
// in view order.
struct Candidates {
  std::vector<EntryRef> refs;
  std::vector<int32_t> src, pos;
  std::vector<float> stats;  // [n][n_stats]
  int32_t size() const { return static_cast<int32_t>(refs.size()); }
  void clear() {
    refs.clear();
    src.clear();
    pos.clear();
    stats.clear();
  }
};

// One entry as tests and needle-survival queries see it.
struct EntryInfo {
  int32_t pos = 0;
  int32_t src = 0;
  uint64_t seqs = 0;
  bool cold = false;
  std::string precision;
};

class StoreView final : public KvHeadView {
 public:
  int32_t size() const override { return n_; }
  // Concatenated on first use when the view has several pieces (attention
  // reads each piece's own positions instead).
  const int32_t* positions() const override {
    if (!pos_) concat_positions();
    return pos_;
  }
  const float* keys(int32_t begin, int32_t count, float* scratch) const override {
    return direct_k_ ? direct_k_ + int64_t{begin} * dim_ : rows(true, begin, count, scratch);
  }
  const float* values(int32_t begin, int32_t count, float* scratch) const override {
    return direct_v_ ? direct_v_ + int64_t{begin} * dim_ : rows(false, begin, count, scratch);
  }
  // Every piece in place, unless a segment has no such form (KIVI once it
  // quantizes): then attention decodes the view through keys()/values().
  std::span<const KvPiece> pieces() const override {
    return {kv_pieces_.data(), static_cast<size_t>(n_kv_pieces_)};
  }

 private:
  friend class CacheStore;
  struct Piece {
    const Segment* seg = nullptr;
    int slot = 0;
    const int32_t* idx = nullptr;  // null: every entry of the segment
    int32_t count = 0;
    int32_t offset = 0;  // first view index
  };
  const float* rows(bool keys, int32_t begin, int32_t count, float* scratch) const;
  std::array<Piece, kSlots> pieces_{};
  int n_pieces_ = 0;
  int32_t n_ = 0;
  int dim_ = 0;
  void concat_positions() const;
  mutable const int32_t* pos_ = nullptr;
  mutable std::vector<int32_t> view_pos_;
  const float* direct_k_ = nullptr;
  const float* direct_v_ = nullptr;
  std::array<KvPiece, kSlots * Segment::kMaxPieces> kv_pieces_{};
  int n_kv_pieces_ = 0;
};

class CacheStore {
 public:
  static constexpr int kMaxSeqs = 64;

  explicit CacheStore(const StoreConfig& config);
  std::unique_ptr<CacheStore> clone() const;

  const StoreConfig& config() const { return config_; }
  const KvShape& shape() const { return config_.shape; }
  // The RoPE the keys of `layer` are rotated with (n_dims filled in when the
  // config leaves it 0): rope_local on a sliding-window layer, else rope.
  const RopeConfig& rope_of(int layer) const { return is_local(layer) ? rope_local_ : rope_; }
  int n_heads() const { return config_.shape.n_layers * config_.shape.n_kv_heads; }

  // --- the step protocol
  // SequenceError, before anything changes, for a position outside
  // [0, kMaxPosition] (positions.h).
  void begin_step(int seq, std::span<const int32_t> positions, bool decode);
  // k, v: [n_tokens][n_kv_heads][head_dim]
  void append(int layer, const float* k, const float* v);
  const KvHeadView& view(int layer, int kv_head) { return view_for(step_seq_, layer, kv_head); }
  // Adds one query's attention over the head's current view to its entries'
  // statistics (acc += p, last = p; p summed over the group's query heads).
  void observe(const AttentionRows& rows);
  // Encodes the step's rows into their storage (and KIVI's flush rules).
  void end_step();
  // Copies every entry of a `full` f32 store (statistics mapped by name, key
  // norms recomputed), then encodes them as end_step would. This store must be empty.
  void import_entries(const CacheStore& full);
  bool in_step() const { return in_step_; }
  int step_seq() const { return step_seq_; }
  bool step_is_decode() const { return step_decode_; }
  int32_t step_tokens() const { return static_cast<int32_t>(step_positions_.size()); }
  int64_t tokens_seen() const { return next_src_; }

  // The entries of `seq` a head attends over (valid until the next call).
  const KvHeadView& view_for(int seq, int layer, int kv_head);

  // --- maintenance
  void gather(int seq, int layer, int kv_head, Candidates& out) const;
  // How many entries gather() would return (no copies).
  int32_t count_candidates(int seq, int layer, int kv_head) const;
  // An upper bound of count_candidates for any sequence: the candidate
  // segments' sizes (O(1)).
  int32_t candidates_at_most(int layer, int kv_head) const;
  // Evicts entries for `seq`: an entry only `seq` holds is freed (into the
  // cold tier / summary when configured); a shared one loses the seq's bit.
  void evict(int seq, int layer, int kv_head, std::span<const EntryRef> refs);
  // CaM: applies merges between the candidates `refs` (ValueMerge indices
  // into it, grouped by `from`; `from` is evicted, targets are kept). A group is applied only when
  // its evicted entry and every target are held by `seq` alone. Returns the groups applied.
  int32_t merge_values(int seq, int layer, int kv_head, std::span<const EntryRef> refs,
                       std::span<const ValueMerge> merges);
  // mixed: moves incoming (f32) entries into main (quantized).
  void demote(int layer, int kv_head, std::span<const EntryRef> refs);
  // StreamingLLM: positions of `seq`'s entries in this head become
  // contiguous in arrival order, ending at the newest entry's position (it
  // does not move); keys re-rotated.
  void renumber_contiguous(int seq, int layer, int kv_head);
  // ThinK: the key channels marked in zero[c] (head_dim flags) become 0 in
  // the keys of `seq`'s hot entries in this head that no other sequence
  // holds (re-encoded in their codec); returns how many entries changed.
  // UnsupportedOperation for KIVI's key blocks.
  int32_t zero_key_channels(int seq, int layer, int kv_head, std::span<const char> zero);
  // A local layer's native window (llama.cpp's ISWA): `seq`'s entries of
  // `layer` at positions <= cutoff leave every tier (no queries of the
  // sequence can see them again). Not eviction: nothing goes to the cold tier
  // or the summary, and next_position() does not move.
  void trim_window(int seq, int layer, int32_t cutoff);
  // offload: replaces the head's restored pages by the `max_pages` pages of
  // highest Quest bound, a page's bound being its largest over the queries
  // q: [n_queries] rows `q_stride` floats apart, each [group][head_dim].
  void restore(int seq, int layer, int kv_head, const float* q, int64_t n_queries, int64_t q_stride,
               int group, int max_pages);
  // offload: replaces the head's restored pages by the `max_pages` pages of
  // highest score (scores: [pages of the head], NaN: not eligible).
  void restore_pages(int seq, int layer, int kv_head, std::span<const float> scores, int max_pages);
  // offload, restore by importance (the seed's rule): adds the attention one
  // query q ([group][head_dim], rotated) pays each cold entry of `seq`, a
  // softmax over every entry the sequence holds (hot and cold, each once)
  // of the model's scores: q . k * scale (0: 1/sqrt(head_dim)), soft-capped
  // when softcap > 0 (CacheContext::attn_scale, attn_softcap); averaged over
  // the group, into the entry's running average (span 2 / alpha - 1 steps).
  void observe_cold(int seq, int layer, int kv_head, const float* q, int group, float alpha,
                    float scale, float softcap);
  // Per cold page of the head: the largest running average of its entries
  // that reaches `threshold`, NaN when none does.
  void importance_scores(int seq, int layer, int kv_head, float threshold,
                         std::vector<float>& out) const;
  void clear_restored();
  int32_t restored(int layer, int kv_head) const;

  // --- sequences (llama.cpp semantics; see policy_cache.h)
  void clear();
  void seq_rm(int seq, int64_t p0, int64_t p1);
  void seq_cp(int src, int dst, int64_t p0, int64_t p1);
  void seq_keep(int seq);
  // SequenceError, changing nothing, when an entry would move beyond
  // kMaxPosition (entries moved below 0 are removed, as in llama.cpp).
  void seq_add(int seq, int64_t p0, int64_t p1, int64_t delta);
  void seq_div(int seq, int64_t p0, int64_t p1, int64_t d);
  // The smallest / largest position `seq` holds, hot or cold (-1: none),
  // from the position index (no scan).
  int32_t pos_min(int seq) const;
  int32_t pos_max(int seq) const;
  std::pair<int32_t, int32_t> pos_range(int seq, const char* what = "pos_range") const;
  int32_t next_position(int seq) const;
  void compact();
  uint64_t known_sequences() const { return known_; }

  // --- queries
  MemoryReport memory() const;
  bool holds(int layer, int kv_head, int64_t source_index) const;    // any tier
  bool attends(int layer, int kv_head, int64_t source_index) const;  // main, incoming, restored
  std::vector<EntryInfo> entries(int layer, int kv_head) const;
  // Decodes the entry with stream index `src` (hot first, then cold) into k, v [head_dim].
  bool find(int layer, int kv_head, int32_t src, float* k, float* v) const;
  int32_t hot_entries(int seq, int layer, int kv_head) const;  // visible to seq, every segment
  int64_t hot_total() const;
  const Segment* segment(int layer, int kv_head, int slot) const {
    return heads_[layer * shape().n_kv_heads + kv_head].segs[slot].get();
  }
  const ColdTier* cold() const { return cold_.get(); }

  // --- snapshots (policies/cache_state.cpp)
  // Everything but scratch: segments of every head and slot, the cold tier,
  // stream counter, sequences. Not inside a step.
  void save_state(StateWriter& out) const;
  // Into a store freshly made from the same StoreConfig (empty). Checks each
  // segment's kind against the configuration, every entry's sequence set
  // and stream index against the counters, and every position (held or
  // evicted) against kMaxPosition; SnapshotError otherwise.
  void load_state(StateReader& in);

  // --- checkpoints (policies/cache_checkpoint.h / .cpp)
  StoreCheckpoint checkpoint() const;
  void rollback(const StoreCheckpoint& cp);

 private:
  // clone(): every member copied (segments and the cold tier through their
  // own clone()); views are rebuilt by the next view_for().
  CacheStore(const CacheStore&) = default;
  struct HeadState {
    std::array<ClonePtr<Segment>, kSlots> segs;
    StoreView view;
    std::array<std::vector<int32_t>, kSlots> visible;
    // visible[slot] split by a segment's pieces, relative to each piece's first row
    std::array<std::vector<int32_t>, kSlots> visible_in_piece;
  };
  HeadState& head(int layer, int kv_head) { return heads_[layer * shape().n_kv_heads + kv_head]; }
  const HeadState& head(int layer, int kv_head) const {
    return heads_[layer * shape().n_kv_heads + kv_head];
  }
  void check_seq(int seq, bool allow_all, const char* op) const;
  void check_known(int seq, const char* op) const;
  static void check_range(int64_t p0, int64_t p1, const char* op, int32_t& lo, int32_t& hi);
  // Applies pos -> f(pos) for `seq`'s entries in [lo, hi): keys re-rotated,
  // entries whose new position is negative removed. Checks everything first.
  template <typename F>
  void shift_positions(int seq, int32_t lo, int32_t hi, F f, const char* op);
  // Takes `bit` off the entries of heads [h0, h1) in `slots` and the cold
  // tier whose position `selected(pos)` picks; frees those no sequence holds
  // any more (seq_rm, trim_window).
  template <typename F>
  void release_entries(uint64_t bit, int h0, int h1, std::initializer_list<int> slots, F selected);
  void flush_incoming();
  // Whether `bit`'s sequence holds an entry of the page.
  bool visible(const ColdPage& p, uint64_t bit) const;
  // The segments and cold pages pos_min / pos_max see count their entries
  // into positions_ (link), or are counted anew (after their arrays were
  // filled directly: a snapshot loaded, a checkpoint rolled back).
  void link_positions();
  void recount_positions();
  void fold_into_summary(HeadState& hs, const Segment& from, int32_t i, uint64_t seqs);
  void note_evicted(int seq, int32_t pos);

  // The rotation that moves a key of `layer` by `delta` positions (cached).
  const Rotation& rotation_for(int layer, int64_t delta);

  bool is_local(int layer) const {
    return !config_.layer_window.empty() && config_.layer_window[layer] > 0;
  }

  StoreConfig config_;
  RopeConfig rope_, rope_local_;  // config_'s, usable (rope_of)
  std::vector<float> inv_freq_, inv_freq_local_;
  std::vector<HeadState> heads_;  // [n_layers * n_kv_heads]
  ClonePtr<ColdTier> cold_;
  std::vector<float> observe_sum_;  // observe(): group sums when not given
  // The open step.
  bool in_step_ = false;
  int step_seq_ = 0;
  bool step_decode_ = false;
  std::vector<int32_t> step_positions_;
  int64_t next_src_ = 0;
  // Sequences.
  uint64_t known_ = 0;
  PositionIndex positions_;  // per sequence, entries per position (hot and cold)
  std::array<int32_t, kMaxSeqs>
      evicted_max_{};  // largest position evicted by the policy (-1: none)
  // Scratch reused across calls.
  std::vector<char> flags_[kSlots];
  std::vector<float> row_k_, row_v_;
  Rotation rotation_;
};

}  // namespace kvbench
