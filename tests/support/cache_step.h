// The cache tests feed steps by hand: positions, token ids and a StepInfo
// before each append. begin_test_step does that preamble once.
#pragma once

#include <cstdint>
#include <vector>

#include "model/ops/kv_cache.h"
#include "policies/cache_context.h"

namespace kvbench::test {

// The context of a small model-less cache: `shape`, RoPE over the whole
// head, ratio budgets of `context_tokens`.
CacheContext test_cache_context(const KvShape& shape, int64_t context_tokens);

// The positions and token ids a begun step's StepInfo points at: keep it
// until the step ends.
struct TestStep {
  std::vector<int32_t> pos, tok;
};

// Begins a step of `n` new tokens at positions first, first + 1, ... (token
// ids 0) of sequence `seq` on `cache`.
TestStep begin_test_step(KvCache& cache, int32_t first, int n, StepPhase phase = StepPhase::Prefill,
                         int seq = 0);

}  // namespace kvbench::test
