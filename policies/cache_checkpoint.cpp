// Checkpoint and rollback of a cache (see cache_checkpoint.h for why and
// what is kept). Every rollback checks all segments first and only then
// changes anything.
#include "policies/cache_checkpoint.h"

#include <algorithm>

#include "policies/cold_tier.h"
#include "policies/policy_cache.h"

namespace kvbench {

static_assert(StoreCheckpoint::kSlotCount == kSlots);

namespace {

// The checkpointed entries are still the first ones, at the same positions.
void check_in_place(const EntryMeta& now, const EntryMeta& then) {
  if (now.size() < then.size() || !std::equal(then.src.begin(), then.src.end(), now.src.begin()) ||
      !std::equal(then.pos.begin(), then.pos.end(), now.pos.begin()))
    throw InputError(
        "rollback: entries of the checkpoint were removed or moved (only sequences created after "
        "the "
        "checkpoint may be changed before a rollback)");
}

struct KiviMark final : SegmentMark {
  int32_t kq = 0, vq = 0;
  std::vector<float> kfull, vfull;  // the full-precision residual rows
  std::vector<int32_t> block_counts;
  std::vector<int32_t> free_blocks;
  int32_t live_blocks = 0;
};

}  // namespace

// --- segments ---

std::unique_ptr<SegmentMark> Segment::mark() const {
  auto m = std::make_unique<SegmentMark>();
  m->meta = meta;
  return m;
}

void Segment::check_rollback(const SegmentMark& m) const { check_in_place(meta, m.meta); }

// Subclasses truncate their rows first, then call this.
void Segment::rollback(const SegmentMark& m) { meta = m.meta; }

void RowSegment::rollback(const SegmentMark& m) {
  materialize();
  // Entries [0, n) are the checkpoint's; everything after them is newer.
  const size_t bytes = static_cast<size_t>(m.meta.size()) * codec_.row_bytes();
  k_.resize(bytes);
  v_.resize(bytes);
  Segment::rollback(m);
}

std::unique_ptr<SegmentMark> KiviSegment::mark() const {
  auto m = std::make_unique<KiviMark>();
  m->meta = meta;
  m->kq = kq_;
  m->vq = vq_;
  m->kfull = kfull_;
  m->vfull = vfull_;
  for (const Block& b : blocks_) m->block_counts.push_back(b.count);
  m->free_blocks = free_blocks_;
  m->live_blocks = live_blocks_;
  return m;
}

void KiviSegment::check_rollback(const SegmentMark& mark) const {
  Segment::check_rollback(mark);
  const auto& m = static_cast<const KiviMark&>(mark);
  // Quantization only advances over the checkpoint's entries; the block
  // table only grows.
  if (kq_ < m.kq || vq_ < m.vq || blocks_.size() < m.block_counts.size())
    throw InputError("rollback: KIVI blocks of the checkpoint were removed");
}

void KiviSegment::rollback(const SegmentMark& mark) {
  kparams_stale_ = true;
  const auto& m = static_cast<const KiviMark&>(mark);
  const int64_t code_row = key_code_row();
  // Codes of keys and values quantized since are dropped; the residual rows
  // they came from are put back.
  kcodes_.resize(static_cast<size_t>(m.kq) * code_row);
  if (keys_ == KiviKeys::Channel) kblock_.resize(m.kq);
  kq_ = m.kq;
  kfull_ = m.kfull;
  vcodes_.resize(static_cast<size_t>(m.vq) * vcodec_.row_bytes());
  vq_ = m.vq;
  vfull_ = m.vfull;
  // Blocks live at the checkpoint hold only checkpointed keys and were never
  // rewritten; blocks created or reused since are empty again.
  blocks_.resize(m.block_counts.size());
  for (size_t b = 0; b < blocks_.size(); ++b) {
    blocks_[b].count = m.block_counts[b];
    if (blocks_[b].count == 0) {
      blocks_[b].params.clear();
      blocks_[b].params.shrink_to_fit();
    }
  }
  free_blocks_ = m.free_blocks;
  live_blocks_ = m.live_blocks;
  Segment::rollback(mark);
}

// --- cold tier ---

ColdMark ColdTier::mark() const {
  ColdMark m;
  m.pages.resize(heads_.size());
  for (size_t h = 0; h < heads_.size(); ++h)
    for (const ColdPage& p : heads_[h].pages) m.pages[h].push_back(p.meta);
  return m;
}

void ColdTier::check_rollback(const ColdMark& m) const {
  for (size_t h = 0; h < heads_.size(); ++h) {
    if (heads_[h].pages.size() < m.pages[h].size())
      throw InputError("rollback: cold pages of the checkpoint were removed");
    for (size_t i = 0; i < m.pages[h].size(); ++i)
      check_in_place(heads_[h].pages[i].meta, m.pages[h][i]);
  }
}

void ColdTier::rollback(const ColdMark& m) {
  for (size_t h = 0; h < heads_.size(); ++h) {
    auto& pages = heads_[h].pages;
    // Pages opened since go; the older ones drop the entries added to them.
    for (size_t i = m.pages[h].size(); i < pages.size(); ++i) arena_->release(pages[i].slot);
    pages.resize(m.pages[h].size());
    for (size_t i = 0; i < pages.size(); ++i) {
      if (pages[i].meta.size() == m.pages[h][i].size()) {
        pages[i].meta = m.pages[h][i];  // sequence sets may have changed; bounds not
        continue;
      }
      pages[i].meta = m.pages[h][i];
      recompute_bounds(pages[i]);
    }
  }
}

// --- the store ---

StoreCheckpoint CacheStore::checkpoint() const {
  if (in_step_) throw InputError("checkpoint: not allowed inside a step");
  StoreCheckpoint cp;
  cp.next_src = next_src_;
  cp.known = known_;
  cp.evicted_max = evicted_max_;
  cp.step_seq = step_seq_;
  cp.step_decode = step_decode_;
  cp.marks.resize(heads_.size());
  cp.copies.resize(heads_.size());
  for (size_t h = 0; h < heads_.size(); ++h)
    for (int slot = 0; slot < kSlots; ++slot) {
      const Segment* s = heads_[h].segs[slot].get();
      if (!s) continue;
      // Restored pages follow the current query, and `mixed` demotes shared
      // full-precision entries: both change under other sequences, so they
      // are copied (restored: a few pages; mixed: its full-precision share).
      const bool copy =
          slot == kRestored || (config_.layout == StoreConfig::Layout::Mixed && slot == kIncoming);
      if (copy)
        cp.copies[h][slot] = s->clone();
      else
        cp.marks[h][slot] = s->mark();
    }
  if (cold_) cp.cold = cold_->mark();
  return cp;
}

void CacheStore::rollback(const StoreCheckpoint& cp) {
  if (in_step_) throw InputError("rollback: not allowed inside a step");
  if (cp.marks.size() != heads_.size())
    throw InputError("rollback: the checkpoint is of another cache");
  for (size_t h = 0; h < heads_.size(); ++h)
    for (int slot = 0; slot < kSlots; ++slot)
      if (cp.marks[h][slot]) heads_[h].segs[slot]->check_rollback(*cp.marks[h][slot]);
  if (cold_) cold_->check_rollback(cp.cold);

  for (size_t h = 0; h < heads_.size(); ++h)
    for (int slot = 0; slot < kSlots; ++slot) {
      if (cp.marks[h][slot])
        heads_[h].segs[slot]->rollback(*cp.marks[h][slot]);
      else if (cp.copies[h][slot])
        heads_[h].segs[slot] = cp.copies[h][slot]->clone();
    }
  if (cold_) cold_->rollback(cp.cold);
  recount_positions();  // the segments and pages took the checkpoint's arrays
  next_src_ = cp.next_src;
  known_ = cp.known;
  evicted_max_ = cp.evicted_max;
  step_seq_ = cp.step_seq;
  step_decode_ = cp.step_decode;
}

// --- the cache ---

PolicyCache::Checkpoint PolicyCache::checkpoint() const {
  Checkpoint cp;
  cp.owner = this;
  cp.store = store_->checkpoint();
  cp.window = window_;
  cp.qstats = qstats_;
  cp.step_decode = step_decode_;
  cp.decode_steps = decode_steps_;
  return cp;
}

void PolicyCache::rollback(const Checkpoint& cp) {
  if (cp.owner != this) throw InputError("rollback: the checkpoint was taken of another cache");
  store_->rollback(cp.store);
  window_ = cp.window;
  qstats_ = cp.qstats;
  step_decode_ = cp.step_decode;
  decode_steps_ = cp.decode_steps;
}

}  // namespace kvbench
