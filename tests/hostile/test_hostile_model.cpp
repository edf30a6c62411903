// Hostile model files and cache snapshots: positions a snapshot forges (the
// cache's arithmetic on them must not overflow), GGUF keys of the wrong type,
// and GGUF files whose tensors do not match their hyper-parameters. The CLI
// cases assert the error contract (exit 2, one "error:" line naming the file
// and the field, key or tensor, nothing written); the library cases the
// typed exception and its message.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "harness/snapshot/snapshot_file.h"
#include "policies/cache_errors.h"
#include "policies/policy_cache.h"
#include "tests/hostile/hostile_support.h"
#include "tests/support/cli_run.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

namespace fs = std::filesystem;
using test::expect_input_error;
using test::run_kvbench;
using test::scratch;
using test::tree;

// --- positions in a store (item 9)
// ---------------------------------------------

CacheContext small_context() {
  CacheContext c;
  c.shape = {2, 1, 2, 8};
  c.rope.n_dims = 8;
  c.context_tokens = 64;
  return c;
}

// One step of `positions` for sequence 0 (constant keys and values).
void step(PolicyCache &c, std::vector<int32_t> positions) {
  StepInfo info;
  info.seq = 0;
  info.phase = StepPhase::Prefill;
  info.positions = positions;
  c.begin_step(info);
  const KvShape &sh = c.shape();
  const std::vector<float> kv(positions.size() * sh.n_kv_heads * sh.head_dim,
                              0.5f);
  for (int l = 0; l < sh.n_layers; ++l)
    c.append(l, kv.data(), kv.data());
  c.end_step();
}

std::string state_of(const PolicyCache &c) {
  std::ostringstream out;
  StateWriter w(out);
  c.save_state(w);
  return out.str();
}

template <typename E, typename F> std::string error_of(F &&f) {
  try {
    f();
  } catch (const E &e) {
    return e.what();
  }
  return "(no error)";
}

// Positions enter a store through steps and shifts too: each is checked
// against kMaxPosition, a refused one changes nothing, and any position the
// store holds leaves next_position() in int32.
TEST(HostileModel, StepsAndShiftsStayWithinTheLargestPosition) {
  auto cache = PolicyCache::create(parse_policy_spec("full"), small_context());
  step(*cache, {0, 1, 2, 3});
  const std::string before = state_of(*cache);
  const std::string max = std::to_string(kMaxPosition);
  for (int32_t p : {kMaxPosition + 1, INT32_MAX, -1, INT32_MIN}) {
    EXPECT_EQ(error_of<SequenceError>([&] {
                step(*cache, {4, p});
              }),
              "step: position " + std::to_string(p) + " is outside [0, " + max +
                  "]");
    EXPECT_FALSE(cache->store().in_step());
    EXPECT_TRUE(state_of(*cache) == before) << "a refused step changed the cache";
  }
  // seq_add pushing past the maximum: refused before anything moves.
  EXPECT_EQ(
      error_of<SequenceError>([&] { cache->seq_add(0, -1, -1, kMaxPosition); }),
      "seq_add: position 1 would move to 1073741824, beyond the largest "
      "position " +
          max);
  EXPECT_EQ(
      error_of<SequenceError>([&] { cache->seq_add(0, 3, 4, INT32_MAX); }),
      "seq_add: position 3 would move to 2147483650, beyond the largest "
      "position " +
          max);
  // llabs(INT64_MIN) overflows: the shift is compared without it.
  EXPECT_EQ(
      error_of<SequenceError>([&] { cache->seq_add(0, -1, -1, INT64_MIN); }),
      "seq_add: shift -9223372036854775808 is beyond int32");
  EXPECT_TRUE(state_of(*cache) == before) << "a refused shift changed the cache";
  // Up to the maximum itself: next_position is then 2^30, and a step there is
  // refused.
  cache->seq_add(0, 3, 4, kMaxPosition - 3);
  EXPECT_EQ(cache->pos_max(0), kMaxPosition);
  EXPECT_EQ(cache->next_position(0), kMaxPosition + 1);
  EXPECT_EQ(
      error_of<SequenceError>([&] { step(*cache, {cache->next_position(0)}); }),
      "step: position 1073741824 is outside [0, " + max + "]");
}

// A payload's other positions and counters: the query ring's positions and
// the decode-step counter (incremented after each decode step: loaded at
// INT64_MAX it overflowed).
} // namespace
} // namespace kvbench
