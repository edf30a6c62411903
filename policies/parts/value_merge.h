// Value merging, as a part (CaM, Zhang et al. 2024, ICML "CaM: Cache
// Merging for Memory-efficient LLMs Inference", zyxxmu/cam): an evicted
// token i does not vanish; with probability
//   p_i = clamp(A_i / mean_{j in T_i} A_j, 0, 1)
// its value is spread over T_i, the `span` kept tokens that follow it:
//   v_j += v_i / |T_i|  for j in T_i,
// where A is the attention each token has received so far (summed over the
// observed queries and the KV head's group of query heads). Keys are not
// merged. The Bernoulli draw restores a_i v_i in expectation.
// Where kvbench differs (docs/LITERATURE.md): the draw is a seeded hash of
// (seed, layer, head, stream index), so a token's fate does not depend on
// when maintenance runs; every evicted token merges, the prompt's too (the
// paper streams token by token, where every token leaving the window
// merges); |T_i| < span near the end of the cache divides by |T_i|.
// decode_only merges only tokens evicted by decode steps (the official HELM
// variant: the prompt's evicted middle is dropped unmerged).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "policies/part.h"

namespace kvbench {

std::shared_ptr<const Part> make_value_merge_part(int32_t span, bool decode_only);

// The merges between a head's candidates (kept[i] != 0: candidate i stays,
// in ScoreInput order), grouped by `from`. The store applies a group only
// when the evicted entry and all its targets belong to the maintained
// sequence alone (an entry another sequence shares must not change under it).
void plan_value_merges(const ScoreInput& in, const uint8_t* kept, int32_t span,
                       std::vector<ValueMerge>& out);

}  // namespace kvbench
