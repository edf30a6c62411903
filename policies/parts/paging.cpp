#include "policies/parts/paging.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "model/common/error.h"
#include "policies/cache_context.h"

namespace kvbench {
namespace {

class PagingPart final : public Part {
 public:
  PagingPart(const PagingOptions& o, const PartEnv& env)
      : options_(o),
        evicts_(env.scorer.evicts()),
        after_prompt_(env.scorer.timing() != Timing::Stream),
        layer_window_(env.ctx.layer_window) {
    int32_t local_window = 0;  // the longest native window (Gemma 3: one for all local layers)
    for (int32_t w : layer_window_) local_window = std::max(local_window, w);
    // A ratio restore budget on a local layer is a ratio of what its full
    // cache holds (its window, when shorter than the context): restoring a
    // ratio of the whole context to a layer that sees only its window would
    // hold most of that window.
    const int64_t ctx_tokens = env.ctx.context_tokens;
    const int64_t local_context =
        ctx_tokens > 0 ? std::min<int64_t>(ctx_tokens, local_window) : local_window;
    // Nothing is restored for a scorer that never evicts: it holds everything hot.
    int32_t tokens = 0, tokens_local = 0;
    if (evicts_) {
      tokens = clamp32(o.restore.tokens(ctx_tokens));
      tokens_local = local_window == 0 ? tokens : clamp32(o.restore.tokens(local_context));
    }
    // Whole pages: a budget of 40 tokens with pages of 16 restores 3 pages.
    pages_ = (tokens + o.page - 1) / o.page;
    pages_local_ = local_window == 0 ? pages_ : (tokens_local + o.page - 1) / o.page;
  }

  void configure(CacheSetup& s) const override {
    s.store.offload = true;
    if (options_.by_importance) s.store.cold_stats = 2;  // running average, its weight
    s.store.page = options_.page;
    s.store.file_tier = options_.file_tier;
    s.store.cold_capacity = options_.capacity;
    s.store.dir = options_.dir;
  }
  int32_t extra_hot(bool local_layer) const override {
    return (local_layer ? pages_local_ : pages_) * options_.page;
  }
  int queries_kept() const override { return 1; }

  void on_queries(const RestoreStep& step) const override {
    if (pages_ == 0) return;
    if (step.decode && step.decode_steps % options_.every != 0) return;
    restore_layer(step);
  }
  // Eviction that waited for the prompt (timing once / every / call) has
  // just filled the cold tier: the prompt's last query picks the pages held
  // at question time. (Streaming restored during the question's own step.)
  void after_prefill(const RestoreStep& step) const override {
    if (pages_ == 0 || !evicts_ || !after_prompt_) return;
    restore_layer(step);
  }
  double restore_bytes_per_step(const CacheStore& store) const override {
    const ColdTier* cold = store.cold();
    return cold ? static_cast<double>(cold->bound_bytes()) / options_.every : 0.0;
  }

 private:
  static int32_t clamp32(int64_t v) {
    return static_cast<int32_t>(std::min<int64_t>(v, INT32_MAX));
  }
  bool local(int layer) const { return !layer_window_.empty() && layer_window_[layer] > 0; }
  // The step's layer restores up to its pages (none: nothing), by the rule.
  void restore_layer(const RestoreStep& step) const {
    const int pages = local(step.layer) ? pages_local_ : pages_;
    if (pages == 0) return;
    options_.by_importance ? restore_by_importance(step, pages) : restore(step, pages);
  }
  // q: [n_queries][n_q_heads * head_dim], the queries that bound the pages.
  void restore(const RestoreStep& step, int pages) const {
    const KvShape& sh = step.store.shape();
    const int group = sh.n_q_heads / sh.n_kv_heads;
    const int64_t hd = sh.head_dim;
    const int64_t qd = int64_t{sh.n_q_heads} * hd;
    for (int h = 0; h < sh.n_kv_heads; ++h)
      step.store.restore(step.seq, step.layer, h, step.q + h * group * hd, step.n_queries, qd,
                         group, pages);
  }

  // The seed's rule: the step's last query updates every cold token's
  // running attention, then the eligible pages are restored.
  void restore_by_importance(const RestoreStep& step, int pages) const {
    const KvShape& sh = step.store.shape();
    const int group = sh.n_q_heads / sh.n_kv_heads;
    const int64_t hd = sh.head_dim;
    const float* last = step.q + (step.n_queries - 1) * int64_t{sh.n_q_heads} * hd;
    const float alpha = 2.0f / static_cast<float>(options_.window + 1);
    static thread_local std::vector<float> scores;
    for (int h = 0; h < sh.n_kv_heads; ++h) {
      step.store.observe_cold(step.seq, step.layer, h, last + h * group * hd, group, alpha,
                              step.attn_scale, step.attn_softcap);
      step.store.importance_scores(step.seq, step.layer, h, static_cast<float>(options_.threshold),
                                   scores);
      step.store.restore_pages(step.seq, step.layer, h, scores, pages);
    }
  }

  PagingOptions options_;
  bool evicts_, after_prompt_;
  std::vector<int32_t> layer_window_;
  int pages_ = 0, pages_local_ = 0;
};

std::vector<std::shared_ptr<const Part>> offload_parts(const ComponentSpec& s, const PartEnv& env) {
  PagingOptions o;
  o.page = static_cast<int>(s.get_int("page"));
  o.restore = s.get_budget("restore");
  o.every = static_cast<int>(s.get_int("every"));
  o.file_tier = s.get("tier") == "file";
  o.dir = s.get("dir");
  o.capacity = s.get_int("capacity");
  o.by_importance = s.get("rule") == "importance";
  o.window = static_cast<int>(s.get_int("window"));
  o.threshold = s.get_number("threshold");
  return {make_paging_part(o, env)};
}

void check_offload(const PolicySpec& s, const ComponentSpec&) {
  // One row codec per entry: the cold tier keeps rows as the hot tier encodes them.
  if (s.storage.name == "kivi2" || s.storage.name == "mixed")
    throw InputError("policy '" + to_string(s) +
                     "': offload needs one row codec (f32, f16, bf16, int8, int4), not " +
                     s.storage.name);
}

}  // namespace

std::shared_ptr<const Part> make_paging_part(const PagingOptions& options, const PartEnv& env) {
  return std::make_shared<PagingPart>(options, env);
}

ComponentInfo declare_offload() {
  ComponentInfo c = extra_component(
      "offload",
      "evicted entries go to a cold tier, paged in position order with per-channel key min/max; "
      "at every step (prefill chunks included) the step's queries bound each page and the best "
      "pages are attended in that same step (restored bytes count as hot)",
      {{"page", ParamType::Int, "16", "tokens per cold page", 1, 4096},
       {"restore", ParamType::Budget, "64",
        "tokens per KV head restored from the cold tier at each step, on top of the eviction "
        "budget: tokens (64) or a ratio of the context (0.05; of its window on a local layer)"},
       {"tier",
        ParamType::Choice,
        "ram",
        "cold tier: ram, or an mmap'd file",
        0,
        0,
        {"ram", "file"}},
       {"dir", ParamType::Text, "/tmp", "directory of the cold-tier file (tier=file)"},
       {"every", ParamType::Int, "1", "decode steps between restores", 1, 1e6},
       {"capacity", ParamType::Int, "16384",
        "cold-tier capacity in tokens per KV head (the seed's offload_size); when full, the oldest "
        "pages are dropped",
        1, 1e9},
       {"rule",
        ParamType::Choice,
        "bound",
        "which pages come back: bound (each step's queries bound a page's attention by its key "
        "min/max, as Quest) or importance (the seed's: a token's attention over a rolling window "
        "of `window` steps reaches `threshold`)",
        0,
        0,
        {"bound", "importance"}},
       {"window", ParamType::Int, "100", "rule=importance: steps of the rolling window", 1, 1e6},
       {"threshold", ParamType::Number, "0.1",
        "rule=importance: the attention (a share of the query's) that brings a token back", 0, 1}},
      offload_parts, check_offload);
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "page=4";
  return c;
}

}  // namespace kvbench
