#include "harness/run/policy_start.h"

#include <algorithm>

#include "harness/reconstruction.h"
#include "model/steps.h"
#include "policies/registry.h"

namespace kvbench {

StartPlan plan_start(const PolicySpec& spec, const CacheContext& ctx,
                     const std::vector<Span>& chunks, bool share) {
  StartPlan r;
  if (!share) return r;
  // Sharing is exact only when the policy stores what the full cache stores
  // until its first maintenance.
  if (!PolicyCache::prefill_matches_full(spec)) return r;
  const auto probe = PolicyCache::create(spec, ctx);
  r.start = Start::Branch;
  if (!probe->streaming()) return r;
  // Streaming: identical to the full cache until the first chunk after which
  // its maintenance evicts (a chunk is attended in full before maintenance
  // runs; the cache itself says when that is). When that chunk is the last,
  // the whole prefill is shared.
  const int32_t evicts_after = probe->first_eviction_tokens();
  for (size_t i = 0; i + 1 < chunks.size(); ++i)
    if (chunks[i].end > evicts_after) {
      r.start = Start::Resume;
      r.resume_after_chunk = i;
      break;
    }
  return r;
}

CacheContext shared_full_context(const CacheContext& ctx,
                                 std::span<const PolicySpec* const> specs) {
  CacheContext full = ctx;
  for (const PolicySpec* s : specs) {
    const auto needs = PolicyCache::create(*s, ctx)->import_needs();
    full.collect_attention = full.collect_attention || needs.attention;
    full.keep_queries = std::max(full.keep_queries, needs.queries);
    if (full.query_stats_skip < 0) full.query_stats_skip = needs.query_stats_skip;
  }
  return full;
}

int query_stats_skip_needed(const PolicySpec& spec) {
  // What import_needs() reports, without making a cache.
  const ScorerNeeds needs = PolicyCache::scorer_needs(spec);
  return needs.query_stats ? needs.query_stats_skip : -1;
}

void settle_query_stats(std::span<const PolicySpec* const> specs, std::span<StartPlan> plans) {
  int skip = -1;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (plans[i].start == Start::Scratch) continue;
    const int need = query_stats_skip_needed(*specs[i]);
    if (need < 0) continue;
    if (skip < 0) skip = need;
    if (need != skip) plans[i] = StartPlan{};
  }
}

SharedPrefill run_shared_prefill(Evaluator& eval, const CacheContext& full_ctx,
                                 std::span<const int32_t> tokens, const std::vector<Span>& chunks,
                                 const std::vector<size_t>& kept_chunks) {
  SharedPrefill s;
  s.full = PolicyCache::create(parse_policy_spec(kReferencePolicy), full_ctx);
  s.logits.resize(eval.model().config().n_vocab);
  prefill(eval, *s.full, tokens, chunks,
          {.last_logits = s.logits.data(), .after_chunk = [&](size_t i, const float*) {
             if (i + 1 < chunks.size() &&
                 std::find(kept_chunks.begin(), kept_chunks.end(), i) != kept_chunks.end())
               s.after_chunk[i] = s.full->clone();
           }});
  s.full->end_prefill();
  return s;
}

StartedCache start_policy(const PolicySpec& spec, const CacheContext& ctx, const StartPlan& plan,
                          const SharedPrefill& shared, Evaluator& eval,
                          std::span<const int32_t> tokens, const std::vector<Span>& chunks,
                          const std::function<void(PolicyCache&)>& prepare,
                          ReconstructionMemo* memo, PriorityMemo* priorities) {
  StartedCache r;
  r.cache = PolicyCache::create(spec, ctx);
  if (prepare) prepare(*r.cache);
  if (plan.start == Start::Branch) {
    // The prompt is processed exactly as by the full cache; the policy
    // compresses at end_prefill.
    r.cache->import_from(*shared.full);
    r.logits = shared.logits;
  } else {
    size_t first = 0;
    if (plan.start == Start::Resume) {
      r.cache->import_from(*shared.after_chunk.at(plan.resume_after_chunk));
      first = plan.resume_after_chunk + 1;
    }
    r.logits.resize(eval.model().config().n_vocab);
    prefill(eval, *r.cache, tokens, chunks, {.first = first, .last_logits = r.logits.data()});
    for (size_t i = first; i < chunks.size(); ++i) r.computed += chunks[i].size();
  }
  // A policy that needs a reconstruction pass runs it in the prompt's chunk size.
  int64_t chunk = 1;
  for (const Span& c : chunks) chunk = std::max(chunk, c.size());
  if (memo && plan.start == Start::Branch && r.cache->needs_reconstruction()) {
    // Every branch holds the full cache's prompt: one pass serves all.
    const ScorerNeeds n = PolicyCache::scorer_needs(spec);
    const auto key =
        std::make_tuple(n.reconstruction_chunk, n.reconstruction_sinks, static_cast<int>(chunk));
    auto it = memo->tables.find(key);
    if (it == memo->tables.end()) {
      it = memo->tables
               .emplace(key, reconstruction_tables(eval, *r.cache, tokens, static_cast<int>(chunk)))
               .first;
      ++memo->passes;
    }
    set_reconstruction(*r.cache, it->second);
    if (priorities) r.cache->share_priorities(priorities);
    r.cache->end_prefill();
    r.cache->share_priorities(nullptr);
    return r;
  }
  if (priorities && plan.start == Start::Branch && !r.cache->needs_reconstruction()) {
    // What finish_prompt does without a reconstruction pass, with the memo.
    r.cache->share_priorities(priorities);
    r.cache->end_prefill();
    r.cache->share_priorities(nullptr);
    return r;
  }
  finish_prompt(eval, *r.cache, tokens, static_cast<int>(chunk));
  return r;
}

}  // namespace kvbench
