// Segments: the storage of one KV head's entries. Each entry has a K row, a
// V row (in the segment's precision) and metadata kept apart from the rows
// (position, stream index, sequence set, policy statistics) in parallel
// arrays. A head holds a few segments (main, incoming, restored, summary;
// see cache_store.h); a view concatenates the visible entries of all of them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/ops/kv_cache.h"
#include "policies/codec.h"
#include "policies/memory_report.h"
#include "policies/position_index.h"

namespace kvbench {

class StateReader;
class StateWriter;
struct SegmentMark;

// Bytes of the fixed per-entry metadata: position (4), stream index (4),
// sequence set (8); statistics add 4 each.
inline constexpr int64_t kEntryMetaBytes = 16;

// Per-entry metadata, one array per field. The arrays are read directly;
// they change only through the functions below (pos and seqs of an entry
// through set_pos / set_seqs), which keep `index`, when set, counting
// exactly the (sequence, position) pairs the arrays hold. A copy carries the
// arrays, not the index link: the store links its own segments and pages.
struct EntryMeta {
  std::vector<int32_t> pos;    // [n] rotary position
  std::vector<int32_t> src;    // [n] stream index (arrival order); -1 for a summary entry
  std::vector<uint64_t> seqs;  // [n] bit s set = sequence s holds the entry
  std::vector<float> stats;    // [n][n_stats]
  int n_stats = 0;
  PositionIndex* index = nullptr;  // the store's position counts (null: not counted)

  // A copy is not counted (a checkpoint's, a clone's until the store links
  // it); a move carries the entries and their link along (pages moved by a
  // vector). An assignment keeps the target's link: its entries were taken
  // out of the index before (or are counted anew after a rollback).
  EntryMeta() = default;
  EntryMeta(const EntryMeta& o)
      : pos(o.pos), src(o.src), seqs(o.seqs), stats(o.stats), n_stats(o.n_stats) {}
  EntryMeta(EntryMeta&& o) noexcept
      : pos(std::move(o.pos)),
        src(std::move(o.src)),
        seqs(std::move(o.seqs)),
        stats(std::move(o.stats)),
        n_stats(o.n_stats),
        index(o.index) {
    o.index = nullptr;
  }
  EntryMeta& operator=(const EntryMeta& o) {
    pos = o.pos;
    src = o.src;
    seqs = o.seqs;
    stats = o.stats;
    n_stats = o.n_stats;
    return *this;
  }
  EntryMeta& operator=(EntryMeta&& o) noexcept {
    pos = std::move(o.pos);
    src = std::move(o.src);
    seqs = std::move(o.seqs);
    stats = std::move(o.stats);
    n_stats = o.n_stats;
    return *this;
  }

  int32_t size() const { return static_cast<int32_t>(pos.size()); }
  float* stat(int32_t i) { return stats.data() + int64_t{i} * n_stats; }
  const float* stat(int32_t i) const { return stats.data() + int64_t{i} * n_stats; }
  // stats may be null (zeros).
  void push(int32_t p, int32_t s, uint64_t q, const float* st);
  void push_from(const EntryMeta& o, int32_t i);
  void copy_entry(int32_t to, int32_t from);
  void pop_back();
  void set_pos(int32_t i, int32_t p);
  void set_seqs(int32_t i, uint64_t q);
  // Keeps the entries whose keep[i] is true, in order.
  void compact(const std::vector<char>& keep);
  void clear();
  void shrink();
  // Adds every entry to index (after the arrays were filled directly: a
  // snapshot loaded, a checkpoint rolled back).
  void count_into(PositionIndex& index) const;
  uint64_t bytes() const { return static_cast<uint64_t>(size()) * (kEntryMetaBytes + 4 * n_stats); }
};

// Cos / sin of a re-rotation by `delta` positions, computed once per delta
// exactly as rope_rotate computes its angles.
// Re-rotation of a stored key by `delta` positions, in the model's RoPE
// pairing: (2i, 2i+1) (LLaMA GGUF) or (i, i + n_dims/2) (NEOX: Gemma 3).
struct Rotation {
  int64_t delta = 0;
  bool neox = false;
  const std::vector<float>* inv_freq = nullptr;  // what cos / sin were made from
  std::vector<float> cos, sin;                   // [n_dims / 2]
  void set(int64_t d, const std::vector<float>& inv_freq, bool neox);
  // Whether set(d, f, neox) would make this same rotation.
  bool is(int64_t d, const std::vector<float>& f, bool nx) const {
    return !cos.empty() && delta == d && inv_freq == &f && neox == nx;
  }
  void apply(float* x) const;  // one row of head_dim
};

class Segment {
 public:
  Segment(int dim, int n_stats) : dim_(dim) { meta.n_stats = n_stats; }
  virtual ~Segment() = default;
  virtual std::unique_ptr<Segment> clone() const = 0;

  int32_t size() const { return meta.size(); }
  int dim() const { return dim_; }

  // One entry from f32 rows k, v: [dim].
  virtual void append(const float* k, const float* v, int32_t pos, int32_t src, uint64_t seqs,
                      const float* stats) = 0;
  // Removes the entries marked in remove[i] (size() flags). Row segments
  // fill holes from the end (order changes, O(1) per entry); order-keeping
  // segments (KIVI) shift.
  virtual void remove(const std::vector<char>& remove) = 0;
  virtual void clear() = 0;
  virtual void shrink() = 0;

  // Rows [begin, begin + count) decoded to f32: out [count][dim].
  virtual void decode_keys(int32_t begin, int32_t count, float* out) const = 0;
  virtual void decode_values(int32_t begin, int32_t count, float* out) const = 0;
  // The rows themselves when held as contiguous f32 ([size()][dim]), else null.
  virtual const float* f32_keys() const { return nullptr; }
  virtual const float* f32_values() const { return nullptr; }
  // Describes rows [0, size()) as attention reads them in place: pieces
  // (model/ops/kv_cache.h; offsets relative to the segment) into out, at most
  // kMaxPieces, and returns how many; 0 when the storage has no such form.
  static constexpr int kMaxPieces = 3;
  virtual int pieces_in_place(KvPiece* out) const { return 0; }

  // Whether entry i's key can be re-rotated (shift of its position).
  virtual bool can_rotate(int32_t i) const = 0;
  virtual void rotate_key(int32_t i, const Rotation& r) = 0;

  virtual void tally(MemoryTally& t) const = 0;
  virtual std::string precision() const = 0;

  // Snapshots (policies/cache_state.cpp): the complete state, and reading it
  // back into an empty segment of the same configuration. load_state checks
  // every count and index against the configuration; SnapshotError otherwise.
  virtual void save_state(StateWriter& out) const = 0;
  virtual void load_state(StateReader& in) = 0;
  // Checkpoints (policies/cache_checkpoint.cpp): what rollback() needs to
  // return the segment to this moment, given that its entries [0, size())
  // stay in place meanwhile (other sequences only append after them and
  // remove their own). check_rollback throws InputError when they did not;
  // rollback assumes it passed.
  virtual std::unique_ptr<SegmentMark> mark() const;
  virtual void check_rollback(const SegmentMark& mark) const;
  virtual void rollback(const SegmentMark& mark);

  EntryMeta meta;

 protected:
  int dim_;
};

// Entries as encoded rows of one codec: [n][row_bytes] for K and for V.
class RowSegment final : public Segment {
 public:
  RowSegment(const RowCodec& codec, int n_stats) : Segment(codec.dim(), n_stats), codec_(codec) {}
  // A clone owns its rows (references are copied into it).
  std::unique_ptr<Segment> clone() const override;

  const RowCodec& codec() const { return codec_; }
  void append(const float* k, const float* v, int32_t pos, int32_t src, uint64_t seqs,
              const float* stats) override;
  // Rows already encoded in this codec (offload / restore move bytes, never re-encode).
  void append_encoded(const uint8_t* k, const uint8_t* v, int32_t pos, int32_t src, uint64_t seqs,
                      const float* stats);
  // An entry whose rows stay where they are (restored cold pages): the
  // segment keeps pointers to k and v, which must stay valid and unchanged
  // until the segment is cleared or materialize() copies them in. A segment
  // holds either references or rows of its own, never both.
  void append_ref(const uint8_t* k, const uint8_t* v, int32_t pos, int32_t src, uint64_t seqs);
  bool holds_refs() const { return !kref_.empty(); }
  // Copies referenced rows into the segment's own storage.
  void materialize();
  const uint8_t* key_bytes(int32_t i) const {
    return kref_.empty() ? k_.data() + i * codec_.row_bytes() : kref_[i];
  }
  const uint8_t* value_bytes(int32_t i) const {
    return vref_.empty() ? v_.data() + i * codec_.row_bytes() : vref_[i];
  }
  // f32 codec only: the rows themselves, for in-place updates (summary entries).
  float* f32_key_row(int32_t i) {
    return reinterpret_cast<float*>(k_.data() + i * codec_.row_bytes());
  }
  float* f32_value_row(int32_t i) {
    return reinterpret_cast<float*>(v_.data() + i * codec_.row_bytes());
  }

  // Value row i += w * v (v: [dim]), re-encoded in the codec (CaM's merge).
  void add_to_value(int32_t i, const float* v, float w);
  // Key row i's channels marked in zero[c] set to 0, re-encoded (ThinK);
  // exact for f32 / f16 / bf16, one more rounding for the integer codecs.
  void zero_key_channels(int32_t i, std::span<const char> zero);

  void remove(const std::vector<char>& remove) override;
  void clear() override;
  void shrink() override;
  void decode_keys(int32_t begin, int32_t count, float* out) const override;
  void decode_values(int32_t begin, int32_t count, float* out) const override;
  const float* f32_keys() const override;
  const float* f32_values() const override;
  // One piece, every codec.
  int pieces_in_place(KvPiece* out) const override;
  bool can_rotate(int32_t) const override { return codec_rotatable(); }
  void rotate_key(int32_t i, const Rotation& r) override;
  void tally(MemoryTally& t) const override;
  std::string precision() const override { return std::string(codec_name(codec_.kind())); }

  // f32 / f16 / bf16 keys can be re-rotated (f16 / bf16 re-round once per shift).
  bool codec_rotatable() const;

  void save_state(StateWriter& out) const override;
  void load_state(StateReader& in) override;
  void rollback(const SegmentMark& mark) override;

 private:
  RowCodec codec_;
  std::vector<uint8_t> k_, v_;               // [n][row_bytes]
  std::vector<const uint8_t*> kref_, vref_;  // [n] rows held elsewhere (append_ref)
};

// Which side of a KIVI cache is quantized, and along which axis: KIVI itself
// is keys per channel and values per token; the other settings exist to ablate
// it (each side alone, keys per token as ordinary int2 rows).
enum class KiviKeys : uint8_t { Channel = 0, Token = 1, F32 = 2 };
enum class KiviValues : uint8_t { Token = 0, F32 = 1 };

// KIVI 2-bit (Liu et al. 2024), entries in arrival order:
//   keys    (Channel, KIVI's) the oldest kq entries quantized per channel in
//           blocks of `group` tokens (per block and channel an f16 min and
//           step, 2-bit codes); newer keys in f32; when R full-precision keys
//           accumulate they are quantized together (R / group blocks).
//           (Token) all but the newest R keys quantized per token like the
//           values. (F32) never quantized.
//   values  (Token) all but the newest R entries quantized per token (groups
//           of `group` channels, int2); the newest R in f32. (F32) never.
// Evicting an entry from a key block drops its codes; the block's params
// live until its last entry goes.
class KiviSegment final : public Segment {
 public:
  KiviSegment(int dim, int group, int residual, int n_stats, KiviKeys keys = KiviKeys::Channel,
              KiviValues values = KiviValues::Token);
  std::unique_ptr<Segment> clone() const override {
    auto c = std::make_unique<KiviSegment>(*this);
    c->kparams_stale_ = true;  // the copy's blocks live elsewhere
    return c;
  }

  void append(const float* k, const float* v, int32_t pos, int32_t src, uint64_t seqs,
              const float* stats) override;
  // KIVI's rules, run after each step: quantize keys R at a time, values
  // beyond the newest R.
  void flush();
  void remove(const std::vector<char>& remove) override;
  void clear() override;
  void shrink() override;
  void decode_keys(int32_t begin, int32_t count, float* out) const override;
  void decode_values(int32_t begin, int32_t count, float* out) const override;
  const float* f32_keys() const override;
  const float* f32_values() const override;
  // Up to three pieces, cut where keys and where values stop being
  // quantized: K2 (per channel), Q2 (per token) or F32 keys, Q2 or F32 values.
  int pieces_in_place(KvPiece* out) const override;
  bool can_rotate(int32_t i) const override { return i >= kq_; }
  void rotate_key(int32_t i, const Rotation& r) override;
  void tally(MemoryTally& t) const override;
  std::string precision() const override { return "kivi2"; }

  int32_t quantized_keys() const { return kq_; }
  int32_t quantized_values() const { return vq_; }
  KiviKeys keys_mode() const { return keys_; }
  KiviValues values_mode() const { return values_; }
  // Error bound of entry i's key in channel c (0 in the residual), for tests;
  // per-channel keys only.
  float key_bound(int32_t i, int c) const;
  const RowCodec& value_codec() const { return vcodec_; }
  const RowCodec& key_codec() const { return kcodec_; }  // keys per token only
  // Key blocks holding live entries: the counter the accounting uses, and a
  // recount from the entries themselves (the tests compare the two).
  int32_t live_blocks() const { return live_blocks_; }
  int32_t distinct_blocks() const;

  void save_state(StateWriter& out) const override;
  void load_state(StateReader& in) override;
  std::unique_ptr<SegmentMark> mark() const override;
  void check_rollback(const SegmentMark& mark) const override;
  void rollback(const SegmentMark& mark) override;

 private:
  struct Block {
    std::vector<uint16_t> params;  // [2][dim]: f16 min, then f16 step, per channel
    int32_t count = 0;             // live entries coded against it
  };
  // Bytes of one quantized key: dim / 4 codes per channel block, or one
  // int2 row (codes + per-group params) per token.
  int64_t key_code_row() const { return keys_ == KiviKeys::Token ? kcodec_.row_bytes() : dim_ / 4; }

  int group_, residual_;
  KiviKeys keys_;
  KiviValues values_;
  RowCodec vcodec_;              // int2, groups of min(group, dim) channels
  RowCodec kcodec_;              // the same, for keys per token
  int32_t kq_ = 0, vq_ = 0;      // quantized keys / values (the oldest entries)
  std::vector<uint8_t> kcodes_;  // [kq][key_code_row()]
  std::vector<int32_t> kblock_;  // [kq] block of each quantized key (Channel only)
  std::vector<Block> blocks_;
  std::vector<int32_t> free_blocks_;
  int32_t live_blocks_ = 0;
  std::vector<float> kfull_;     // [n - kq][dim]
  std::vector<uint8_t> vcodes_;  // [vq][vcodec.row_bytes]
  std::vector<float> vfull_;     // [n - vq][dim]
  std::vector<char> keep_;       // scratch of remove()
  // [kq] block params of each quantized key, rebuilt by pieces_in_place only
  // after the keys changed (flush, remove, clear, load, rollback, clone).
  mutable std::vector<const uint16_t*> kparams_;
  mutable bool kparams_stale_ = true;
};

}  // namespace kvbench
