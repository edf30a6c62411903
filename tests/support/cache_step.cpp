#include "tests/support/cache_step.h"

#include <numeric>

namespace kvbench::test {

CacheContext test_cache_context(const KvShape& shape, int64_t context_tokens) {
  CacheContext c;
  c.shape = shape;
  c.rope.n_dims = shape.head_dim;
  c.context_tokens = context_tokens;
  return c;
}

TestStep begin_test_step(KvCache& cache, int32_t first, int n, StepPhase phase, int seq) {
  TestStep s{std::vector<int32_t>(n), std::vector<int32_t>(n, 0)};
  std::iota(s.pos.begin(), s.pos.end(), first);
  StepInfo info;
  info.seq = seq;
  info.phase = phase;
  info.positions = s.pos;
  info.tokens = s.tok;
  cache.begin_step(info);
  return s;  // moving the vectors keeps their buffers, which info points at
}

}  // namespace kvbench::test
