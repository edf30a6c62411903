// Checkpoints of a cache: one context prefilled once, many questions
// answered on sequences that share it, and after each answer the cache
// returns exactly to the context's state — without copying its K/V.
//
// Why a checkpoint is needed at all: another sequence's steps change state
// its entries share with the context. Observed attention accumulates into
// the shared entries' statistics (h2o, hybrid, tova), the query rings fill
// with the question's queries, restored pages follow the current query,
// KIVI quantizes the context's residual keys once enough tokens follow, and
// `mixed` demotes shared full-precision entries. seq_rm alone would leave
// all of that behind, and the next question would see a different cache.
//
// What a checkpoint holds: the entries' metadata (position, stream index,
// sequence set, statistics: 16 + 4 x stats bytes per entry), the query
// rings, the small stores-wide counters, and copies of what can be re-encoded
// under the context (restored pages; KIVI's full-precision residual and block
// table; `mixed`'s full-precision segment). K/V rows of the context are never
// copied: they stay at the same place in their segments while other
// sequences append after them and remove only their own entries, so rollback
// truncates each segment to its size at the checkpoint.
//
// Precondition between checkpoint() and rollback(): steps and sequence
// operations touch only sequences the checkpoint did not know (seq_cp from a
// known one is fine). rollback() checks that the checkpointed entries are
// still in place (InputError otherwise; the cache is then unusable: clear it).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "policies/segment.h"

namespace kvbench {

// What a checkpoint keeps of one segment (subclasses add layout state).
struct SegmentMark {
  virtual ~SegmentMark() = default;
  EntryMeta meta;  // the entries' metadata at the checkpoint
};

// Cold tier: per head, per page, the page's entries at the checkpoint.
struct ColdMark {
  std::vector<std::vector<EntryMeta>> pages;  // [head][page]
};

struct StoreCheckpoint {
  static constexpr int kSlotCount = 4;  // main, incoming, restored, summary
  int64_t next_src = 0;
  uint64_t known = 0;
  std::array<int32_t, 64> evicted_max{};
  int step_seq = 0;
  bool step_decode = false;
  // Per head and slot: a mark (entries stay in place) or a full copy
  // (segments other sequences may re-encode); null when the slot is empty.
  std::vector<std::array<std::unique_ptr<SegmentMark>, kSlotCount>> marks;
  std::vector<std::array<std::unique_ptr<Segment>, kSlotCount>> copies;
  ColdMark cold;
};

}  // namespace kvbench
