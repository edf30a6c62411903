// Perplexity of a token stream: the tokens are cut into windows of `ctx`
// tokens (the tail is dropped), each evaluated from an empty cache in prefill
// chunks; in each window the predictions of tokens skip+1 .. ctx-1 are scored.
// skip = ctx/2 reproduces llama-perplexity's convention.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/evaluator.h"

namespace kvbench {

struct PerplexityOptions {
  int ctx = 512;
  int skip = 0;
  int chunk = 512;
  bool bos_per_window = false;  // replace each window's first token by BOS
};

struct PerplexityResult {
  double nll = 0.0;  // mean negative log-likelihood (nats)
  double ppl = 0.0;
  int64_t scored = 0;
  int64_t windows = 0;
  std::vector<double> running_ppl;  // after each window
};

// `on_window(done, total, running_ppl)` is called after each window.
PerplexityResult perplexity(Evaluator& eval, const std::vector<int32_t>& tokens,
                            const PerplexityOptions& options,
                            const std::function<void(int64_t, int64_t, double)>& on_window = {});

}  // namespace kvbench
