// Perplexity of a token stream: the tokens are cut into windows of `ctx`
// tokens (the tail is dropped), each evaluated from an empty cache in prefill
// chunks; in each window the predictions of tokens skip+1 .. ctx-1 are scored.
// skip = ctx/2 reproduces llama-perplexity's convention.
//
// The cache is the given policy (default: full), created afresh per window
// with the window as its context; a bounded policy streams the whole window
// through its budget chunk by chunk (small chunks = close to token by token),
// each chunk placed at the cache's next position (so contiguous-position
// policies keep positions inside the cache).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/evaluator.h"
#include "policies/memory_report.h"
#include "policies/policy_spec.h"

namespace kvbench {

struct PerplexityOptions {
  int ctx = 512;
  int skip = 0;
  int chunk = 512;
  bool bos_per_window = false;  // replace each window's first token by BOS
  PolicySpec policy;            // default: full
  uint64_t seed = 0;            // cache context seed (random scorer)
};

struct PerplexityResult {
  double nll = 0.0;  // mean negative log-likelihood (nats)
  double ppl = 0.0;
  int64_t scored = 0;
  int64_t windows = 0;
  std::vector<double> running_ppl;  // after each window
  // [chunks of a window] mean NLL of the predictions made in each chunk, over
  // all windows: the perplexity's profile along the window (where a policy or
  // positions past the training context start to hurt).
  std::vector<double> chunk_nll;
  MemoryReport memory;          // the last window's cache at its end
  int64_t peak_hot_bytes = 0;   // largest hot total after any chunk
  double policy_seconds = 0.0;  // time inside the policy, all windows
};

// `on_window(done, total, running_ppl)` is called after each window.
PerplexityResult perplexity(Evaluator& eval, const std::vector<int32_t>& tokens,
                            const PerplexityOptions& options,
                            const std::function<void(int64_t, int64_t, double)>& on_window = {});

}  // namespace kvbench
