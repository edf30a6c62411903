// How a policy's cell gets its post-prompt state, and the proof obligation
// behind it: every path gives bit-for-bit the state (and last logits) the
// policy reaches prefilling the prompt alone (tests/test_policy_start.cpp
// checks every spec the registry can build).
//
//   Branch   import the full cache's state after the whole prompt, then
//            end_prefill(): the policy does nothing before the prompt is in
//            (timing once / every, paging after prefill), or never evicts
//            during it (its first eviction would come after the last chunk).
//   Resume   import the full cache's state after chunk i, the last chunk
//            after which the policy still holds exactly what a full cache
//            holds (its maintenance runs inside import_from), then prefill
//            the remaining chunks itself.
//   Scratch  prefill everything itself (storage other than f32 changes K/V
//            from the first token; sharing disabled).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <vector>

#include "datasets/instance.h"
#include "harness/reconstruction.h"
#include "model/evaluator.h"
#include "policies/policy_cache.h"

namespace kvbench {

enum class Start { Branch, Resume, Scratch };

struct StartPlan {
  Start start = Start::Scratch;
  size_t resume_after_chunk = 0;  // Resume: import the full cache's state after this chunk
};

// chunks: the prompt's prefill steps, in order, covering [0, n).
StartPlan plan_start(const PolicySpec& spec, const CacheContext& ctx,
                     const std::vector<Span>& chunks, bool share);

// The full cache's context for sharing with `specs`: ctx plus the attention
// statistics, queries and query statistics their caches need to import from
// it. One skip of query statistics is collected: the first spec's that needs
// them (settle_query_stats makes the others prefill themselves).
CacheContext shared_full_context(const CacheContext& ctx, std::span<const PolicySpec* const> specs);

// The query-statistics skip a spec needs from the full cache, or -1.
int query_stats_skip_needed(const PolicySpec& spec);

// Plans that import (branch or resume) and need query statistics with
// another skip than the first such plan's become Scratch: the shared full
// cache collects one. specs[i] goes with plans[i].
void settle_query_stats(std::span<const PolicySpec* const> specs, std::span<StartPlan> plans);

// The shared full prefill: the full cache after the prompt (end_prefill
// done), copies after the chunks Resume plans need, and the last logits.
struct SharedPrefill {
  std::unique_ptr<PolicyCache> full;
  std::map<size_t, std::unique_ptr<PolicyCache>> after_chunk;
  std::vector<float> logits;  // [n_vocab]
};

// The full prefill with copies after `kept_chunks` (none needed after the
// last chunk: that is the full cache itself).
SharedPrefill run_shared_prefill(Evaluator& eval, const CacheContext& full_ctx,
                                 std::span<const int32_t> tokens, const std::vector<Span>& chunks,
                                 const std::vector<size_t>& kept_chunks);

// Reconstruction tables made for branches of one shared prefill, by what the
// pass reads besides the full cache's state (the scorer's pass chunk and
// sinks, the step chunk). KVzip's tables depend on neither its budget nor
// its allocator: every ratio of it reuses one pass. Per instance.
struct ReconstructionMemo {
  std::map<std::tuple<int, int, int>, ReconstructionTables> tables;
  int passes = 0;  // passes run (the rest were reused)
};

// The policy's cache with the prompt in (end_prefill() done) by `plan`, and
// the logits of the prompt's last token, and the prefill tokens it computed
// itself. `prepare` runs on the new cache before anything enters it (the
// oracle's importance). With `priorities`, a Branch start shares its first
// scoring with the other budgets of its family branching from the same
// shared prefill (policies/priority_memo.h; per instance, like `memo`).
struct StartedCache {
  std::unique_ptr<PolicyCache> cache;
  std::vector<float> logits;
  int64_t computed = 0;
};
StartedCache start_policy(const PolicySpec& spec, const CacheContext& ctx, const StartPlan& plan,
                          const SharedPrefill& shared, Evaluator& eval,
                          std::span<const int32_t> tokens, const std::vector<Span>& chunks,
                          const std::function<void(PolicyCache&)>& prepare = {},
                          ReconstructionMemo* memo = nullptr, PriorityMemo* priorities = nullptr);

}  // namespace kvbench
