#include "harness/perplexity.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

#include "policies/policy_cache.h"

namespace kvbench {

PerplexityResult perplexity(Evaluator& eval, const std::vector<int32_t>& tokens,
                            const PerplexityOptions& o,
                            const std::function<void(int64_t, int64_t, double)>& on_window) {
  assert(o.ctx >= 2 && o.chunk >= 1 && o.skip >= 0 && o.skip < o.ctx - 1);
  const LlamaModel& model = eval.model();
  const int n_vocab = model.config().n_vocab;
  PerplexityResult r;
  r.windows = static_cast<int64_t>(tokens.size()) / o.ctx;
  CacheContext cc;
  cc.shape = model.kv_shape();
  cc.rope = model.config().rope;
  cc.context_tokens = o.ctx;
  cc.seed = o.seed;
  std::vector<float> logits(static_cast<size_t>(std::min(o.chunk, o.ctx)) * n_vocab);
  std::vector<int32_t> window, pos;
  double nll_sum = 0.0;
  for (int64_t w = 0; w < r.windows; ++w) {
    window.assign(tokens.begin() + w * o.ctx, tokens.begin() + (w + 1) * o.ctx);
    if (o.bos_per_window && model.tokenizer().bos() >= 0) window[0] = model.tokenizer().bos();
    auto cache = PolicyCache::create(o.policy, cc);
    for (int64_t b = 0; b < o.ctx; b += o.chunk) {
      const int64_t e = std::min<int64_t>(o.ctx, b + o.chunk);
      pos.resize(e - b);
      std::iota(pos.begin(), pos.end(), cache->next_position(0));
      eval.step(std::span<const int32_t>(window.data() + b, e - b), pos, 0, StepPhase::Prefill,
                *cache, Logits::All, logits.data());
      r.peak_hot_bytes = std::max<int64_t>(r.peak_hot_bytes, cache->memory().hot.total());
      // Row i predicts token i + 1: log-softmax in double.
      for (int64_t i = std::max<int64_t>(b, o.skip); i < e && i + 1 < o.ctx; ++i) {
        const float* row = logits.data() + (i - b) * n_vocab;
        const float max = *std::max_element(row, row + n_vocab);
        double sum = 0.0;
        for (int v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max);
        nll_sum += (max + std::log(sum)) - row[window[i + 1]];
        ++r.scored;
      }
    }
    r.policy_seconds += cache->policy_seconds();
    r.memory = cache->memory();
    r.running_ppl.push_back(std::exp(nll_sum / r.scored));
    if (on_window) on_window(w + 1, r.windows, r.running_ppl.back());
  }
  r.nll = r.scored ? nll_sum / r.scored : 0.0;
  r.ppl = std::exp(r.nll);
  return r;
}

}  // namespace kvbench
