// Per sequence, how many entries hold each position, hot or cold (as
// llama.cpp's llama_kv_cells keeps seq_pos): pos_min / pos_max read the first
// and last key instead of scanning the cache. Entries reach it through the
// metadata arrays that hold them (EntryMeta, policies/segment.h): adding,
// overwriting, removing an entry or changing its sequence set or position
// updates the counts, so they always equal what a scan would count.
#pragma once

#include <array>
#include <cstdint>
#include <map>

namespace kvbench {

class PositionIndex {
 public:
  static constexpr int kMaxSeqs = 64;

  // One entry at `pos` held by the sequences of `seqs` (bit s: sequence s).
  void add(uint64_t seqs, int32_t pos) {
    for (; seqs; seqs &= seqs - 1) ++by_seq_[__builtin_ctzll(seqs)][pos];
  }
  void remove(uint64_t seqs, int32_t pos) {
    for (; seqs; seqs &= seqs - 1) {
      auto& counts = by_seq_[__builtin_ctzll(seqs)];
      const auto it = counts.find(pos);
      if (--it->second == 0) counts.erase(it);
    }
  }
  // The smallest / largest position `seq` holds, -1 when none.
  int32_t min(int seq) const { return by_seq_[seq].empty() ? -1 : by_seq_[seq].begin()->first; }
  int32_t max(int seq) const { return by_seq_[seq].empty() ? -1 : by_seq_[seq].rbegin()->first; }
  void clear() {
    for (auto& counts : by_seq_) counts.clear();
  }
  bool operator==(const PositionIndex&) const = default;

 private:
  std::array<std::map<int32_t, int32_t>, kMaxSeqs> by_seq_;  // [seq] position -> entries
};

}  // namespace kvbench
