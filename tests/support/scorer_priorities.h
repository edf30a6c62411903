// A scorer run alone on a head's view: the ScoreInput the scorer tests would
// otherwise each fill in by hand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policies/scorer.h"

namespace kvbench::test {

// The priorities the scorer of policy `spec` gives its candidates: entries
// 0 .. pos.size() - 1 of cx's view (candidate i is view entry i), at
// positions `pos`, `keep` of them to be kept (layer 0, KV head 0).
std::vector<float> scorer_priorities(const std::string& spec, ScoreContext& cx,
                                     const std::vector<int32_t>& pos, int32_t keep);

}  // namespace kvbench::test
