#include "harness/perplexity.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "harness/inference.h"
#include "model/steps.h"
#include "policies/policy_cache.h"

namespace kvbench {

PerplexityResult perplexity(Evaluator& eval, const std::vector<int32_t>& tokens,
                            const PerplexityOptions& o,
                            const std::function<void(int64_t, int64_t, double)>& on_window) {
  assert(o.ctx >= 2 && o.chunk >= 1 && o.skip >= 0 && o.skip < o.ctx - 1);
  const LlamaModel& model = eval.model();
  PerplexityResult r;
  r.windows = static_cast<int64_t>(tokens.size()) / o.ctx;
  const CacheContext cc = cache_context(model, o.ctx, o.seed);
  std::vector<int32_t> window;
  const std::vector<Span> chunks = fixed_chunks(o.ctx, o.chunk);
  NllSum nll;
  std::vector<NllSum> by_chunk(chunks.size());
  for (int64_t w = 0; w < r.windows; ++w) {
    window.assign(tokens.begin() + w * o.ctx, tokens.begin() + (w + 1) * o.ctx);
    if (o.bos_per_window && model.tokenizer().bos() >= 0) window[0] = model.tokenizer().bos();
    auto cache = PolicyCache::create(o.policy, cc);
    NllSum before = nll;
    prefill_nll(eval, *cache, window, chunks, o.skip, nll, [&](size_t i) {
      r.peak_hot_bytes = std::max<int64_t>(r.peak_hot_bytes, cache->memory().hot.total());
      by_chunk[i].sum += nll.sum - before.sum;
      by_chunk[i].count += nll.count - before.count;
      before = nll;
    });
    r.policy_seconds += cache->policy_seconds();
    r.memory = cache->memory();
    r.scored = nll.count;
    r.running_ppl.push_back(std::exp(nll.sum / r.scored));
    if (on_window) on_window(w + 1, r.windows, r.running_ppl.back());
  }
  for (const NllSum& c : by_chunk) r.chunk_nll.push_back(c.mean());
  r.nll = r.scored ? nll.sum / r.scored : 0.0;
  r.ppl = std::exp(r.nll);
  return r;
}

}  // namespace kvbench
