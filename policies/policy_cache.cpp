#include "policies/policy_cache.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "model/common/error.h"
#include "policies/cache_errors.h"
#include "policies/part.h"

namespace kvbench {

namespace {

// Adds the wall time of a scope to a counter (the policy's time share).
class ScopeTimer {
 public:
  explicit ScopeTimer(std::atomic<int64_t>& ns) : ns_(ns), t0_(std::chrono::steady_clock::now()) {}
  ~ScopeTimer() {
    ns_ +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_)
            .count();
  }

 private:
  std::atomic<int64_t>& ns_;
  std::chrono::steady_clock::time_point t0_;
};

// The parts of every component of the spec: the storage's first (a part
// checks the store's layout), then the scorer's, the allocator's, the
// extras'.
PartList make_parts(const PolicySpec& spec, const PartEnv& env) {
  PartList parts;
  std::vector<const ComponentSpec*> from = {&spec.storage, &spec.scorer, &spec.allocator};
  for (const auto& e : spec.extras) from.push_back(&e);
  for (const ComponentSpec* c : from)
    if (const PartsFactory make = c->info().make_parts)
      for (auto& p : make(*c, env)) parts.push_back(std::move(p));
  return parts;
}

// The store's configuration before the parts: shape, RoPE, native windows
// and the statistics the policy observes.
StoreConfig base_store_config(const CacheContext& ctx, const ScorerNeeds& needs,
                              bool observe_attention) {
  StoreConfig sc;
  sc.shape = ctx.shape;
  sc.rope = ctx.rope;
  if (!ctx.layer_window.empty()) {
    if (static_cast<int>(ctx.layer_window.size()) != ctx.shape.n_layers)
      throw InputError("cache: " + std::to_string(ctx.layer_window.size()) + " layer windows for " +
                       std::to_string(ctx.shape.n_layers) + " layers");
    for (int32_t w : ctx.layer_window)
      if (w < 0) throw InputError("cache: a negative sliding window");
    sc.layer_window = ctx.layer_window;
    sc.rope_local = ctx.rope_local;
  }
  if (observe_attention) {
    sc.stats.acc = sc.stats.n++;
    sc.stats.last = sc.stats.n++;
  }
  if (needs.key_norm) sc.stats.norm = sc.stats.n++;
  return sc;
}

}  // namespace

std::unique_ptr<PolicyCache> PolicyCache::create(const PolicySpec& spec, const CacheContext& ctx) {
  const KvShape& sh = ctx.shape;
  if (sh.n_layers < 1 || sh.n_kv_heads < 1 || sh.head_dim < 2 || sh.head_dim % 2 != 0 ||
      sh.n_q_heads < sh.n_kv_heads || sh.n_q_heads % sh.n_kv_heads != 0)
    throw InputError("cache: invalid KV shape");
  auto c = std::unique_ptr<PolicyCache>(new PolicyCache());
  c->spec_ = spec;
  c->ctx_ = ctx;
  c->scorer_ = spec.scorer.info().make_scorer(spec.scorer);
  c->allocator_ = spec.allocator.info().make_allocator(spec.allocator);
  c->needs_ = c->scorer_->needs();
  c->observe_attention_ = c->needs_.attention || ctx.collect_attention;
  c->parts_ = make_parts(spec, PartEnv{ctx, *c->scorer_});
  StoreConfig sc = base_store_config(ctx, c->needs_, c->observe_attention_);
  c->configure(sc);
  c->store_ = std::make_unique<CacheStore>(sc);
  c->window_ =
      QueryWindow(sh.n_layers, query_ring_capacity(*c->scorer_, c->parts_, ctx.keep_queries),
                  int64_t{sh.n_q_heads} * sh.head_dim);
  // The scorer's own statistics, or a full cache's for those that import it.
  const int qskip = c->needs_.query_stats ? c->needs_.query_stats_skip : ctx.query_stats_skip;
  if (c->needs_.query_stats || ctx.query_stats_skip >= 0) {
    std::vector<RopeConfig> ropes;  // each layer's, as its keys are rotated
    for (int l = 0; l < sh.n_layers; ++l) ropes.push_back(c->store_->rope_of(l));
    c->qstats_ = QueryStats(sh.n_q_heads, sh.head_dim, qskip, ropes);
  }
  if (c->needs_.hindsight || c->needs_.reconstruction)
    c->importance_.resize(static_cast<size_t>(sh.n_layers) * sh.n_kv_heads);
  return c;
}

// Budgets per KV head and the parts' configuration. main_budget_ is what
// maintenance evicts down to; restored pages and the summary come on top of
// it (restore has a budget of its own, never taken from the eviction one).
// A ratio budget on a local layer is a ratio of what its full cache holds
// (its window, when shorter than the context).
void PolicyCache::configure(StoreConfig& sc) {
  const int64_t ctx_tokens = ctx_.context_tokens;
  main_budget_ = scorer_->budget(ctx_tokens);
  int32_t local_window = 0;  // the longest native window (Gemma 3: one for all local layers)
  for (int32_t w : ctx_.layer_window) local_window = std::max(local_window, w);
  const int64_t local_context =
      ctx_tokens > 0 ? std::min<int64_t>(ctx_tokens, local_window) : local_window;
  main_budget_local_ = local_window == 0 ? main_budget_ : scorer_->budget(local_context);
  if (spec_.scorer.has("layers")) {
    const std::string l = spec_.scorer.get("layers");
    layers_ = l == "global" ? Layers::Global : l == "local" ? Layers::Local : Layers::All;
    if (layers_ != Layers::All && local_window == 0)
      throw InputError("policy '" + to_string(spec_) + "': layers=" + l +
                       " needs a model with sliding-window layers (gemma3); this one has none");
  }
  CacheSetup setup{spec_,       ctx_,         *scorer_,           *allocator_,
                   sc,          main_budget_, main_budget_local_, local_context,
                   local_window};
  for (const auto& p : parts_) {
    p->configure(setup);
    renumbers_ = renumbers_ || p->renumbers_positions();
    changes_values_ = changes_values_ || p->changes_values();
    changes_keys_ = changes_keys_ || p->changes_keys();
    maintains_always_ = maintains_always_ || p->maintains_without_eviction();
  }
  if (scorer_->evicts() && std::min(main_budget_, main_budget_local_) < 1)
    throw InputError("policy '" + to_string(spec_) + "': a budget of " +
                     std::to_string(main_budget_ + 1) +
                     " leaves no room for entries besides the summary");
  int64_t hot = main_budget_;
  if (scorer_->evicts())
    for (const auto& p : parts_) hot += p->extra_hot(false);
  budget_ = static_cast<int32_t>(std::min<int64_t>(hot, INT32_MAX));
  reserved_ = scorer_->reserved(main_budget_);
}

// --- the step protocol ---

void PolicyCache::begin_step(const StepInfo& info) {
  const bool decode = info.phase == StepPhase::Decode;
  // The store checks the step first (sequence, positions): a refused step changes nothing.
  store_->begin_step(info.seq, info.positions, decode);
  window_.begin(info.seq);
  if (qstats_.enabled()) qstats_.begin(info.seq);
  step_decode_ = decode;
  step_last_pos_ = -1;
  for (int32_t p : info.positions) step_last_pos_ = std::max(step_last_pos_, p);
}

void PolicyCache::append(int layer, const float* k, const float* v) { store_->append(layer, k, v); }

const KvHeadView& PolicyCache::view(int layer, int kv_head) { return store_->view(layer, kv_head); }

AttentionRequest PolicyCache::attention_request(int layer) const {
  AttentionRequest r;
  r.wanted = observe_attention_;
  // A scorer that reads only the last query's attention (TOVA) observes only
  // it, unless the accumulated statistic is used too (a full cache others
  // import from, merge weighted by attention): `acc` then means attention
  // from every query, as everywhere else, and a policy that imports it from
  // a full cache holds exactly what it would have collected itself.
  const bool acc_used =
      ctx_.collect_attention || (store_->config().merge && store_->config().merge_by_attention);
  r.last_queries = needs_.last_query_only && !acc_used ? 1 : -1;
  r.queries = window_.capacity() > 0 || qstats_.enabled();
  return r;
}

void PolicyCache::observe(const AttentionRows& rows) {
  ScopeTimer t(policy_ns_.ns);
  store_->observe(rows);
}

void PolicyCache::observe_queries(int layer, const float* q, std::span<const int32_t> positions) {
  ScopeTimer t(policy_ns_.ns);
  const int64_t n = static_cast<int64_t>(positions.size());
  window_.push(layer, q, positions);
  if (qstats_.enabled()) qstats_.add(layer, q, positions);
  // Restore: this step's queries bound the cold pages and the best ones are
  // attended in this same step (prefill chunks too, so the question's own
  // queries restore before the first answer token).
  if (!acts_on(layer)) return;
  const RestoreStep step{.seq = store_->step_seq(),
                         .layer = layer,
                         .q = q,
                         .n_queries = n,
                         .decode = step_decode_,
                         .decode_steps = decode_steps_,
                         .store = *store_,
                         .attn_scale = ctx_.attn_scale,
                         .attn_softcap = ctx_.attn_softcap};
  for (const auto& p : parts_) p->on_queries(step);
}

void PolicyCache::note_peak() {
  const MemoryReport m = store_->memory();
  peak_prefill_ = std::max<uint64_t>(peak_prefill_, m.hot.kv + m.hot.scales);
}

void PolicyCache::end_step() {
  ScopeTimer t(policy_ns_.ns);
  const int seq = store_->step_seq();
  if (!step_decode_) note_peak();  // the chunk's own rows are still f32
  store_->end_step();
  // Local layers keep their native window, whatever the policy: the entries
  // no later query of the sequence can see leave before the policy scores.
  if (!ctx_.layer_window.empty() && step_last_pos_ >= 0)
    for (int l = 0; l < ctx_.shape.n_layers; ++l)
      if (const int32_t w = window(l); w > 0 && step_last_pos_ - w >= 0)
        store_->trim_window(seq, l, step_last_pos_ - w);
  if (step_decode_) ++decode_steps_;
  const Timing timing = scorer_->timing();
  const bool due =
      scorer_->evicts() &&
      (timing == Timing::Stream || (timing == Timing::Call && step_decode_) ||
       (timing == Timing::Every && step_decode_ && decode_steps_ % scorer_->every() == 0));
  if (due) {
    maintain(seq);
  } else if (maintains_always_) {
    for (int l = 0; l < ctx_.shape.n_layers; ++l) maintain_layer(seq, l, false);
  }
}

void PolicyCache::share_priorities(PriorityMemo* memo) {
  memo_ = memo;
  memo_layers_.assign(ctx_.shape.n_layers, 0);
  if (!memo || !memo_family_.empty()) return;
  // The family: this spec with the scorer's budget left out (every other
  // parameter, part and codec stays in the key).
  PolicySpec family = spec_;
  for (auto& [name, value] : family.scorer.params)
    if (name == "budget") value = "*";
  memo_family_ = to_string(family);
}

void PolicyCache::end_prefill() {
  ScopeTimer t(policy_ns_.ns);
  if (store_->known_sequences() == 0) return;
  const int seq = store_->step_seq();
  if (scorer_->evicts()) maintain(seq);
  // Parts that act once the prompt is in: on the prompt's entries, then
  // restore for the prompt's last query.
  for (int l = 0; l < ctx_.shape.n_layers; ++l)
    if (acts_on(l))
      for (const auto& p : parts_) p->after_prompt({seq, l, window_, *store_, eviction_paused_});
  for (int l = 0; l < ctx_.shape.n_layers; ++l)
    if (const float* q = window_.last(l); q && acts_on(l)) {
      const RestoreStep step{.seq = seq,
                             .layer = l,
                             .q = q,
                             .n_queries = 1,
                             .decode = step_decode_,
                             .decode_steps = decode_steps_,
                             .store = *store_,
                             .attn_scale = ctx_.attn_scale,
                             .attn_softcap = ctx_.attn_softcap};
      for (const auto& p : parts_) p->after_prefill(step);
    }
  decode_steps_ = 0;
}

// --- maintenance ---

void PolicyCache::maintain(int seq) {
  if (allocator_->cross_layer()) return maintain_across_layers(seq);
  for (int l = 0; l < ctx_.shape.n_layers; ++l) maintain_layer(seq, l, true);
}

bool PolicyCache::acts_on(int layer) const {
  for (const auto& p : parts_)
    if (!p->acts_on(layer)) return false;
  switch (layers_) {
    case Layers::Global:
      return window(layer) == 0;
    case Layers::Local:
      return window(layer) > 0;
    default:
      return true;
  }
}

int32_t PolicyCache::evict_above(int layer) const {
  if (!scorer_->evicts() || !acts_on(layer)) return std::numeric_limits<int32_t>::max();
  return allocator_->layer_budget(layer, ctx_.shape.n_layers, main_budget_of(layer), reserved_);
}

int32_t PolicyCache::layer_budget(int layer) const {
  const int32_t e = evict_above(layer);
  if (e == std::numeric_limits<int32_t>::max()) return e;
  int32_t hot = e;
  for (const auto& p : parts_) hot += p->extra_hot(window(layer) > 0);
  return hot;
}

int32_t PolicyCache::first_eviction_tokens() const {
  if (!scorer_->evicts()) return std::numeric_limits<int32_t>::max();
  int32_t t = std::numeric_limits<int32_t>::max();
  // An allocator that spreads a layer's budget by priority evicts once the
  // layer's total passes main_budget_ per head (maintain_layer).
  for (int l = 0; l < ctx_.shape.n_layers; ++l)
    if (acts_on(l))
      t = std::min(t, allocator_->needs_priorities() ? main_budget_of(l) : evict_above(l));
  return t;
}

// --- queries, sequences, sharing ---

MemoryReport PolicyCache::memory() const {
  MemoryReport r = store_->memory();
  r.policy_state += window_.bytes() + qstats_.bytes();
  for (const auto& t : importance_) r.policy_state += t.size() * sizeof(float);
  return r;
}

double PolicyCache::restore_bytes_per_step() const {
  double bytes = 0.0;
  for (const auto& p : parts_) bytes += p->restore_bytes_per_step(*store_);
  return bytes;
}

bool PolicyCache::holds(int layer, int kv_head, int64_t source_index) const {
  return store_->holds(layer, kv_head, source_index);
}

std::vector<int64_t> PolicyCache::held_sources(int layer, int kv_head) const {
  std::vector<int64_t> out;
  for (const auto& e : store_->entries(layer, kv_head))
    if (e.src >= 0) out.push_back(e.src);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void PolicyCache::clear() {
  store_->clear();
  window_.clear();
  qstats_.clear();
}
void PolicyCache::seq_rm(int seq, int64_t p0, int64_t p1) { store_->seq_rm(seq, p0, p1); }
void PolicyCache::seq_cp(int src, int dst, int64_t p0, int64_t p1) {
  if (renumbers_)
    throw UnsupportedOperation(
        "seq_cp: contiguous positions renumber a sequence's entries, which therefore cannot be "
        "shared (use clone())");
  store_->seq_cp(src, dst, p0, p1);
}
void PolicyCache::seq_keep(int seq) { store_->seq_keep(seq); }
void PolicyCache::seq_add(int seq, int64_t p0, int64_t p1, int64_t delta) {
  store_->seq_add(seq, p0, p1, delta);
}
void PolicyCache::seq_div(int seq, int64_t p0, int64_t p1, int64_t d) {
  store_->seq_div(seq, p0, p1, d);
}
void PolicyCache::compact() { store_->compact(); }

std::unique_ptr<PolicyCache> PolicyCache::clone() const {
  return std::unique_ptr<PolicyCache>(new PolicyCache(*this));
}

void PolicyCache::import_from(const PolicyCache& full) {
  const std::string from = to_string(full.spec_);
  if (full.spec_.scorer.name != "full" || full.spec_.storage.name != "f32" ||
      !full.spec_.extras.empty())
    throw InputError("import_from: the source must be a 'full' f32 cache, got '" + from + "'");
  const KvShape &a = full.ctx_.shape, &b = ctx_.shape;
  if (a.n_layers != b.n_layers || a.n_kv_heads != b.n_kv_heads || a.n_q_heads != b.n_q_heads ||
      a.head_dim != b.head_dim)
    throw InputError("import_from: the caches have different shapes");
  if (needs_.query_stats &&
      (!full.qstats_.enabled() || full.qstats_.skip() != needs_.query_stats_skip))
    throw InputError("import_from: '" + to_string(spec_) +
                     "' needs query statistics of the prompt leaving out positions below " +
                     std::to_string(needs_.query_stats_skip) +
                     "; create the full cache with CacheContext.query_stats_skip = that");
  if (store_->known_sequences() != 0 || store_->hot_total() != 0)
    throw InputError("import_from: the target cache must be empty");
  if (store_->in_step() || full.store_->in_step())
    throw InputError("import_from: not allowed inside a step");
  if (import_needs().attention && full.store_->config().stats.acc < 0)
    throw InputError("import_from: " + spec_.scorer.name +
                     " needs attention statistics; create the full cache with "
                     "CacheContext.collect_attention");
  const ImportNeeds in = import_needs();
  if (in.queries > full.window_.capacity())
    throw InputError("import_from: '" + to_string(spec_) + "' needs the last " +
                     std::to_string(in.queries) +
                     " queries; create the full cache with CacheContext.keep_queries >= that");
  ScopeTimer t(policy_ns_.ns);
  store_->import_entries(*full.store_);
  peak_prefill_ = std::max(peak_prefill_, full.peak_prefill_);
  note_peak();
  // The kept queries, newest last; the statistics of all of them.
  window_.take_newest(full.window_);
  if (needs_.query_stats) qstats_ = full.qstats_;
  step_decode_ = full.step_decode_;
  decode_steps_ = full.decode_steps_;
  if (streaming())
    for (int s = 0; s < CacheStore::kMaxSeqs; ++s)
      if (store_->known_sequences() & (uint64_t{1} << s)) maintain(s);
}

int PolicyCache::query_ring_capacity(const Scorer& scorer, const PartList& parts,
                                     int keep_queries) {
  int n = std::max(scorer.needs().window_queries, keep_queries);
  for (const auto& p : parts) n = std::max(n, p->queries_kept());
  return n;
}

int PolicyCache::query_ring_capacity(const PolicySpec& spec, const CacheContext& ctx) {
  const auto scorer = spec.scorer.info().make_scorer(spec.scorer);
  return query_ring_capacity(*scorer, make_parts(spec, PartEnv{ctx, *scorer}), ctx.keep_queries);
}

ScorerNeeds PolicyCache::scorer_needs(const PolicySpec& spec) {
  return spec.scorer.info().make_scorer(spec.scorer)->needs();
}

bool PolicyCache::prefill_matches_full(const PolicySpec& spec) {
  // Lossless storage, and extras that act only when maintenance evicts
  // (offload moves evicted entries to the cold tier, merge folds them).
  if (!spec.storage.info().lossless_until_eviction) return false;
  for (const auto& e : spec.extras)
    if (!e.info().lossless_until_eviction) return false;
  return true;
}

PolicyCache::ImportNeeds PolicyCache::import_needs() const {
  return {needs_.attention, query_ring_capacity(*scorer_, parts_, 0),
          needs_.query_stats ? needs_.query_stats_skip : -1};
}

void PolicyCache::set_importance(int layer, int kv_head, std::span<const float> by_source) {
  if (importance_.empty())
    throw InputError("set_importance: the policy's scorer '" + spec_.scorer.name +
                     "' takes no supplied importance");
  if (layer < 0 || layer >= ctx_.shape.n_layers || kv_head < 0 || kv_head >= ctx_.shape.n_kv_heads)
    throw InputError("set_importance: layer / KV head out of range");
  importance_[layer * ctx_.shape.n_kv_heads + kv_head].assign(by_source.begin(), by_source.end());
}

}  // namespace kvbench
