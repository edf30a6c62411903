// Runs an experiment's cells into a run folder.
//
// Per instance, the full cache's prefill runs once and is shared
// (harness/run/policy_start.h decides how each policy starts from it):
//   - policies that compress after prefill (timing once/every/call, exact
//     f32 storage) start from a copy of the full cache's state (import_from)
//     and compress at end_prefill(): no prefill of their own;
//   - streaming policies with exact storage resume from the full cache's
//     state after the last chunk before their maintenance first evicts
//     (until then they hold exactly what the full cache holds);
//   - everything else (quantized storage changes K/V from the first token)
//     prefills from scratch.
// Sharing never changes a cell's numbers: tests/test_policy_start.cpp proves
// it for every spec the registry builds, and a run test compares folders.
// Then, per cell: memory (hot, cold, peak during prefill) and needle
// survival (held, attended) at question time, teacher-forced answer NLL /
// KL(full || policy) / top-1 agreement against the full cache, greedy
// answer, grade. Each finished cell is written
// atomically, so an interrupted run resumes without losing or repeating work.
#pragma once

#include <functional>

#include <string>

#include "harness/run/experiment.h"
#include "harness/run/plan.h"
#include "harness/run/run_folder.h"
#include "model/llama_model.h"

namespace kvbench {

struct RunOptions {
  int shard = 1, shard_count = 1;  // --shard I/N (1-based)
  bool share_prefill = true;       // off only for tests that check sharing changes nothing
  bool quiet = false;              // no progress output
  // Called after each instance's cells are written, with the cells this
  // run_cells call has run so far (meta.json's session record).
  std::function<void(int64_t cells_run)> after_instance;
};

struct RunSummary {
  int64_t cells_total = 0;    // in this shard
  int64_t cells_run = 0;      // by this invocation
  int64_t cells_skipped = 0;  // already present (resume)
  int64_t prefill_tokens_computed = 0;
  int64_t prefill_tokens_naive = 0;  // every cell prefilling its whole prompt
  int64_t prefills_loaded = 0;       // shared prefills loaded from the run folder (keep_prefills)
  // plan_work only, [plan.policies.size()]: the prefill tokens each policy's
  // cells compute themselves (the shared prefill is in no policy's count),
  // and their prompts' tokens.
  std::vector<int64_t> prefill_tokens_by_policy;
  std::vector<int64_t> prompt_tokens_by_policy;
};

// The prefill work of the shard's cells without running anything: what
// sharing computes versus a naive run (for --dry-run).
RunSummary plan_work(const ExperimentConfig& config, const Plan& plan, const LlamaModel& model,
                     const RunOptions& options);

// Runs the cells of the shard that `run` does not hold yet (the plan was made
// and validated by the caller before the folder was created).
RunSummary run_cells(const ExperimentConfig& config, const Plan& plan, const LlamaModel& model,
                     const RunFolder& run, const RunOptions& options);

}  // namespace kvbench
