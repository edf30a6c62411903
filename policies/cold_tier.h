// The cold tier of `offload`: evicted entries, per KV head, in pages of up to
// P entries holding the rows exactly as they were encoded in the hot tier
// (moving a row out and back never re-encodes it, so an f32 cold tier gives
// bit-identical K/V on restore). Each page carries its keys' per-channel
// min / max, so a query q can bound the page's attention logits (Quest):
//   max over the page's keys k of q.k  <=  sum_i max(q_i * max_i, q_i * min_i)
// The row bytes live in a PageArena: fixed-size slots in RAM or in an
// unlinked temporary file mapped with mmap (so they leave the process heap
// and can be paged out by the kernel).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policies/clone_ptr.h"
#include "policies/codec.h"
#include "policies/segment.h"

namespace kvbench {

class StateReader;
class StateWriter;
struct ColdMark;

class PageArena {
 public:
  // file: back the slots with an unlinked file created in `dir`.
  PageArena(int64_t slot_bytes, bool file, std::string dir);
  ~PageArena();
  PageArena(const PageArena&) = delete;
  PageArena& operator=(const PageArena&) = delete;
  std::unique_ptr<PageArena> clone() const;  // same slots, same contents

  int32_t alloc();
  void release(int32_t slot);
  uint8_t* slot(int32_t s) { return chunks_[s / kChunkSlots] + (s % kChunkSlots) * slot_bytes_; }
  const uint8_t* slot(int32_t s) const {
    return chunks_[s / kChunkSlots] + (s % kChunkSlots) * slot_bytes_;
  }
  int64_t slot_bytes() const { return slot_bytes_; }
  bool file_backed() const { return file_; }

 private:
  static constexpr int kChunkSlots = 64;
  void grow();
  int64_t slot_bytes_;
  bool file_;
  std::string dir_;
  int fd_ = -1;
  std::vector<uint8_t*> chunks_;
  std::vector<int32_t> free_;
  std::vector<char> live_;
};

struct ColdPage {
  int32_t slot = -1;
  EntryMeta meta;                 // n_stats: the tier's (restore by importance keeps 2)
  std::vector<float> kmin, kmax;  // [dim] per-channel key bounds of the live entries
};

// One KV head's cold pages. Rows are `codec`-encoded; K rows at
// slot + i * row_bytes, V rows at slot + (page + i) * row_bytes.
class ColdHead {
 public:
  int32_t entries() const;
  std::vector<ColdPage> pages;
};

class ColdTier {
 public:
  // n_stats: statistics per entry (restore by importance: its running
  // attention average, policies/parts/paging.h).
  ColdTier(const RowCodec& codec, int page, int n_heads, bool file, const std::string& dir,
           int n_stats = 0);
  std::unique_ptr<ColdTier> clone() const;

  int page_size() const { return page_; }
  const RowCodec& codec() const { return codec_; }
  // Every page's entries, and those of pages made later, count into `index`
  // (the store's pos_min / pos_max; null: not counted).
  void link_positions(PositionIndex* index);
  ColdHead& head(int h) { return heads_[h]; }
  const ColdHead& head(int h) const { return heads_[h]; }
  int n_heads() const { return static_cast<int>(heads_.size()); }
  // Bytes of every page's key bounds (kmin, kmax): what a restore reads to
  // rank the pages for a query.
  uint64_t bound_bytes() const;

  // Moves an encoded entry into head h's open page (a new page when full).
  // stats: [n_stats] (null: zeros).
  void put(int h, const uint8_t* k, const uint8_t* v, int32_t pos, int32_t src, uint64_t seqs,
           const float* stats = nullptr);
  int n_stats() const { return n_stats_; }
  const uint8_t* key_bytes(const ColdPage& p, int32_t i) const;
  const uint8_t* value_bytes(const ColdPage& p, int32_t i) const;
  uint8_t* key_bytes(ColdPage& p, int32_t i);
  // Removes flagged entries of page `pi` (swap from the end); frees an empty
  // page; recomputes the page's bounds.
  void remove(int h, int32_t pi, const std::vector<char>& remove);
  void recompute_bounds(ColdPage& p) const;
  // Drops head h's oldest pages (the first evicted) while it holds more than
  // `capacity` entries: the seed's bounded offload store (offload_size).
  void drop_oldest(int h, int64_t capacity);
  // Quest bound of a page for one query vector q [dim].
  static float bound(const ColdPage& p, const float* q, int dim);
  void clear();
  // Head index h = layer * n_kv_heads + kv_head.
  void tally(MemoryReport& r, int n_kv_heads) const;

  // Snapshots (policies/cache_state.cpp): pages in order with their live
  // rows; load_state fills an empty tier of the same configuration and
  // recomputes each page's bounds (always min / max of its live keys).
  void save_state(StateWriter& out) const;
  void load_state(StateReader& in);
  // Checkpoints (policies/cache_checkpoint.cpp): pages that existed keep
  // their first entries meanwhile; rollback drops everything added since.
  ColdMark mark() const;
  void check_rollback(const ColdMark& mark) const;  // InputError when entries moved
  void rollback(const ColdMark& mark);

 private:
  ColdTier(const ColdTier&) = default;  // clone(): the arena's slots copied
  RowCodec codec_;
  int page_;
  int n_stats_ = 0;
  std::vector<ColdHead> heads_;
  PositionIndex* index_ = nullptr;
  ClonePtr<PageArena> arena_;
};

}  // namespace kvbench
