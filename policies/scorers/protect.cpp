// protect_newest / protect_oldest (policies/scorer.h): the helpers scorers
// share to keep a window of recent tokens or attention sinks.
#include <algorithm>
#include <vector>

#include "policies/scorer.h"

namespace kvbench {
namespace {

// The threshold src of the `count` newest / oldest entries, by nth_element
// on a reused buffer.
void protect_by_src(const ScoreInput& in, int32_t count, float* out, bool newest) {
  if (count <= 0) return;
  if (count >= in.n) {
    std::fill(out, out + in.n, Scorer::kKeep);
    return;
  }
  static thread_local std::vector<int32_t> srcs;
  srcs.assign(in.src, in.src + in.n);
  int32_t threshold;
  if (newest) {
    std::nth_element(srcs.begin(), srcs.begin() + (in.n - count), srcs.end());
    threshold = srcs[in.n - count];
    for (int32_t i = 0; i < in.n; ++i)
      if (in.src[i] >= threshold) out[i] = Scorer::kKeep;
  } else {
    std::nth_element(srcs.begin(), srcs.begin() + (count - 1), srcs.end());
    threshold = srcs[count - 1];
    for (int32_t i = 0; i < in.n; ++i)
      if (in.src[i] <= threshold) out[i] = Scorer::kKeep;
  }
}

}  // namespace

void protect_newest(const ScoreInput& in, int32_t count, float* out) {
  protect_by_src(in, count, out, true);
}
void protect_oldest(const ScoreInput& in, int32_t count, float* out) {
  protect_by_src(in, count, out, false);
}

void sinks_then_recent(const ScoreInput& in, int32_t sinks, float* out) {
  for (int32_t i = 0; i < in.n; ++i) out[i] = static_cast<float>(in.src[i]);
  protect_oldest(in, sinks, out);
}

}  // namespace kvbench
