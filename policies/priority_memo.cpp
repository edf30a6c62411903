#include "policies/priority_memo.h"

#include <algorithm>

namespace kvbench {

PriorityMemo::Hit PriorityMemo::find(const std::string& family, MemoKind kind, int layer, int head,
                                     std::span<const int32_t> src, int64_t now,
                                     uint64_t seed) const {
  const auto it = rows_.find({family, static_cast<int>(kind), layer, head});
  if (it == rows_.end()) return {};
  const Row& r = it->second;
  if (r.now != now || r.seed != seed || r.src.size() != src.size() ||
      !std::equal(src.begin(), src.end(), r.src.begin()))
    return {};
  ++reused_[static_cast<int>(kind)];
  return {&r.values, r.seconds};
}

void PriorityMemo::store(const std::string& family, MemoKind kind, int layer, int head,
                         std::span<const int32_t> src, int64_t now, uint64_t seed,
                         std::span<const double> values, double seconds) {
  Row& r = rows_[{family, static_cast<int>(kind), layer, head}];
  r.src.assign(src.begin(), src.end());
  r.now = now;
  r.seed = seed;
  r.values.assign(values.begin(), values.end());
  r.seconds = seconds;
  ++computed_;
}

}  // namespace kvbench
