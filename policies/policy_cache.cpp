#include "policies/policy_cache.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "model/common/error.h"
#include "policies/cache_errors.h"

namespace kvbench {

namespace {

// The scorer's lazy view of one head (policies/scorer.h): K/V decoded only
// when asked, once.
class HeadContext final : public ScoreContext {
 public:
  HeadContext(CacheStore& store, const QueryWindow& window, const QueryStats& stats, int seq,
              int layer, int kv_head)
      : store_(store),
        window_(window),
        stats_(stats),
        seq_(seq),
        layer_(layer),
        kv_head_(kv_head) {}
  int32_t view_size() override { return view().size(); }
  const int32_t* view_positions() override { return view().positions(); }
  const float* keys() override {
    if (!keys_) keys_ = view().keys(0, view().size(), rows(k_scratch_));
    return keys_;
  }
  const float* values() override {
    if (!values_) values_ = view().values(0, view().size(), rows(v_scratch_));
    return values_;
  }
  const QueryWindow& queries() const override { return window_; }
  const QueryStats* query_stats() const override { return stats_.enabled() ? &stats_ : nullptr; }
  const RopeConfig& rope() const override { return store_.rope_of(layer_); }
  int group() const override {
    return store_.config().shape.n_q_heads / store_.config().shape.n_kv_heads;
  }
  int head_dim() const override { return store_.config().shape.head_dim; }

 private:
  const KvHeadView& view() {
    if (!view_) view_ = &store_.view_for(seq_, layer_, kv_head_);
    return *view_;
  }
  float* rows(std::vector<float>& scratch) {
    scratch.resize(static_cast<size_t>(view().size()) * head_dim());
    return scratch.data();
  }
  CacheStore& store_;
  const QueryWindow& window_;
  const QueryStats& stats_;
  int seq_, layer_, kv_head_;
  const KvHeadView* view_ = nullptr;
  const float* keys_ = nullptr;
  const float* values_ = nullptr;
  std::vector<float> k_scratch_, v_scratch_;
};

}  // namespace
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

int group_for(const ComponentSpec& s, int head_dim) {
  const int g = static_cast<int>(std::min<int64_t>(s.get_int("group"), head_dim));
  if (head_dim % g != 0)
    throw InputError("policy '" + s.name + "': group " + std::to_string(g) +
                     " does not divide head_dim " + std::to_string(head_dim));
  return g;
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
  c->scorer_->check_shape(sh);
  if (c->scorer_->has_full_heads() && c->allocator_->needs_priorities())
    throw InputError("policy '" + to_string(spec) + "': '" + spec.scorer.name +
                     "' decides per head which keep everything; use an allocator that does not "
                     "move budget between heads (uniform, pyramid)");
  c->observe_attention_ = c->needs_.attention || ctx.collect_attention;

  StoreConfig sc;
  sc.shape = sh;
  sc.rope = ctx.rope;
  if (!ctx.layer_window.empty()) {
    if (static_cast<int>(ctx.layer_window.size()) != sh.n_layers)
      throw InputError("cache: " + std::to_string(ctx.layer_window.size()) + " layer windows for " +
                       std::to_string(sh.n_layers) + " layers");
    for (int32_t w : ctx.layer_window)
      if (w < 0) throw InputError("cache: a negative sliding window");
    sc.layer_window = ctx.layer_window;
    sc.rope_local = ctx.rope_local;
  }
  if (c->observe_attention_) {
    sc.stats.acc = sc.stats.n++;
    sc.stats.last = sc.stats.n++;
  }
  if (c->needs_.key_norm) sc.stats.norm = sc.stats.n++;

  const int hd = sh.head_dim;
  const ComponentSpec& st = spec.storage;
  if (st.name == "f32")
    sc.codec = RowCodec(CodecKind::F32, hd, hd);
  else if (st.name == "f16")
    sc.codec = RowCodec(CodecKind::F16, hd, hd);
  else if (st.name == "bf16")
    sc.codec = RowCodec(CodecKind::BF16, hd, hd);
  else if (st.name == "int8")
    sc.codec = RowCodec(CodecKind::Int8, hd, group_for(st, hd));
  else if (st.name == "int4")
    sc.codec = RowCodec(CodecKind::Int4, hd, group_for(st, hd));
  else if (st.name == "kivi2") {
    if (hd % 4 != 0) throw InputError("policy 'kivi2': head_dim must be a multiple of 4");
    group_for(st, hd);  // the value groups (channels) must divide head_dim
    sc.layout = StoreConfig::Layout::Kivi;
    sc.kivi_group = static_cast<int>(st.get_int("group"));
    sc.kivi_residual = static_cast<int>(st.get_int("residual"));
    const std::string keys = st.get("keys"), values = st.get("values");
    sc.kivi_keys = keys == "token" ? KiviKeys::Token
                   : keys == "f32" ? KiviKeys::F32
                                   : KiviKeys::Channel;
    sc.kivi_values = values == "f32" ? KiviValues::F32 : KiviValues::Token;
    sc.codec = RowCodec(CodecKind::F32, hd, hd);
  } else if (st.name == "mixed") {
    sc.layout = StoreConfig::Layout::Mixed;
    sc.codec =
        RowCodec(st.get("bits") == "8" ? CodecKind::Int8 : CodecKind::Int4, hd, group_for(st, hd));
    c->mixed_ = true;
    c->mixed_full_ = st.get_number("full");
  } else {
    assert(false && "storage not handled");
  }
  if (c->scorer_->merges_values() && sc.layout == StoreConfig::Layout::Kivi)
    throw InputError("policy '" + to_string(spec) + "': '" + spec.scorer.name +
                     "' merges values into kept entries in place, which KIVI's blocks cannot "
                     "hold; use a row storage (f32, f16, bf16, int8, int4, mixed)");

  // Budgets per KV head: main_budget_ is what maintenance evicts down to;
  // restored pages and the merged summary come on top of it (restore has a
  // budget of its own, never taken from the eviction budget).
  c->main_budget_ = c->scorer_->budget(ctx.context_tokens);
  int32_t local_window = 0;  // the longest native window (Gemma 3: one for all local layers)
  for (int32_t w : ctx.layer_window) local_window = std::max(local_window, w);
  c->main_budget_local_ =
      local_window == 0
          ? c->main_budget_
          : c->scorer_->budget(ctx.context_tokens > 0
                                   ? std::min<int64_t>(ctx.context_tokens, local_window)
                                   : local_window);
  c->dense_ = c->scorer_->evicts() ? c->scorer_->dense_layers() : 0;
  if (spec.scorer.has("layers")) {
    const std::string l = spec.scorer.get("layers");
    c->layers_ = l == "global" ? Layers::Global : l == "local" ? Layers::Local : Layers::All;
    if (c->layers_ != Layers::All && local_window == 0)
      throw InputError("policy '" + to_string(spec) + "': layers=" + l +
                       " needs a model with sliding-window layers (gemma3); this one has none");
  }
  const ComponentSpec* off = spec.extra("offload");  // not with a paging scorer (check_combination)
  int32_t restore_tokens = 0, restore_tokens_local = 0;
  // What a local layer's full cache holds: its window, or the context when shorter.
  const int64_t local_context =
      ctx.context_tokens > 0 ? std::min<int64_t>(ctx.context_tokens, local_window) : local_window;
  if (c->scorer_->page() > 0) {
    sc.offload = true;
    sc.page = c->scorer_->page();
    restore_tokens = c->scorer_->restore_budget(ctx.context_tokens);
    restore_tokens_local =
        local_window == 0 ? restore_tokens : c->scorer_->restore_budget(local_context);
  } else if (off) {
    sc.offload = true;
    sc.page = static_cast<int>(off->get_int("page"));
    sc.file_tier = off->get("tier") == "file";
    sc.cold_capacity = off->get_int("capacity");
    sc.dir = off->get("dir");
    c->restore_every_ = static_cast<int>(off->get_int("every"));
    if (c->scorer_->evicts()) {
      restore_tokens = static_cast<int32_t>(
          std::min<int64_t>(off->get_budget("restore").tokens(ctx.context_tokens), INT32_MAX));
      restore_tokens_local =
          local_window == 0 ? restore_tokens
                            : static_cast<int32_t>(std::min<int64_t>(
                                  off->get_budget("restore").tokens(local_context), INT32_MAX));
    }
  }
  // Whole pages: a budget of 40 tokens with pages of 16 restores 3 pages.
  if (sc.offload) {
    c->restore_pages_ = (restore_tokens + sc.page - 1) / sc.page;
    c->restore_pages_local_ =
        local_window == 0 ? c->restore_pages_ : (restore_tokens_local + sc.page - 1) / sc.page;
  }
  if (const ComponentSpec* m = spec.extra("merge")) {
    sc.merge = true;
    sc.merge_by_attention = m->get("weight") == "attention";
    if (c->scorer_->evicts()) {  // the summary entry
      c->main_budget_ -= 1;
      c->main_budget_local_ -= 1;
    }
  }
  if (c->scorer_->evicts() && std::min(c->main_budget_, c->main_budget_local_) < 1)
    throw InputError("policy '" + to_string(spec) + "': a budget of " +
                     std::to_string(c->main_budget_ + 1) +
                     " leaves no room for entries besides the summary");
  c->budget_ = !c->scorer_->evicts()
                   ? c->main_budget_
                   : static_cast<int32_t>(std::min<int64_t>(
                         int64_t{c->main_budget_} + int64_t{c->restore_pages_} * sc.page +
                             (sc.merge ? 1 : 0),
                         INT32_MAX));
  c->reserved_ = c->scorer_->reserved(c->main_budget_);
  c->store_ = std::make_unique<CacheStore>(sc);

  c->window_ = QueryWindow(sh.n_layers, query_ring_capacity(*c->scorer_, spec, ctx.keep_queries),
                           int64_t{sh.n_q_heads} * hd);
  if (c->needs_.query_stats) {
    std::vector<RopeConfig> ropes;  // each layer's, as its keys are rotated
    for (int l = 0; l < sh.n_layers; ++l) ropes.push_back(c->store_->rope_of(l));
    c->qstats_ = QueryStats(sh.n_q_heads, hd, c->needs_.query_stats_skip, ropes);
  }
  if (c->needs_.hindsight) c->importance_.resize(static_cast<size_t>(sh.n_layers) * sh.n_kv_heads);
  return c;
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
  if (restore_pages_ > 0 && acts_on(layer) &&
      (!step_decode_ || decode_steps_ % restore_every_ == 0))
    restore_layer(store_->step_seq(), layer, q, n);
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
  } else if (mixed_) {
    for (int l = 0; l < ctx_.shape.n_layers; ++l) maintain_layer(seq, l, false);
  }
}

void PolicyCache::end_prefill() {
  ScopeTimer t(policy_ns_.ns);
  if (store_->known_sequences() == 0) return;
  const int seq = store_->step_seq();
  if (scorer_->evicts()) maintain(seq);
  // Eviction that waited for the prompt (timing once / every / call) has just
  // filled the cold tier: the prompt's last query picks the pages held at
  // question time. (Streaming restored during the question's own step.)
  if (restore_pages_ > 0 && scorer_->evicts() && scorer_->timing() != Timing::Stream)
    for (int l = 0; l < ctx_.shape.n_layers; ++l)
      if (const float* q = window_.last(l); q && acts_on(l)) restore_layer(seq, l, q, 1);
  decode_steps_ = 0;
}

void PolicyCache::restore_layer(int seq, int layer, const float* q, int64_t n_queries) {
  if (restore_pages_of(layer) == 0) return;
  const int group = ctx_.shape.n_q_heads / ctx_.shape.n_kv_heads;
  const int64_t hd = ctx_.shape.head_dim;
  const int64_t qd = int64_t{ctx_.shape.n_q_heads} * hd;
  for (int h = 0; h < ctx_.shape.n_kv_heads; ++h)
    store_->restore(seq, layer, h, q + h * group * hd, n_queries, qd, group,
                    restore_pages_of(layer));
}

// --- maintenance ---

void PolicyCache::maintain(int seq) {
  for (int l = 0; l < ctx_.shape.n_layers; ++l) maintain_layer(seq, l, true);
}

bool PolicyCache::acts_on(int layer) const {
  if (layer < dense_) return false;
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
  return e + restore_pages_of(layer) * store_->config().page + (store_->config().merge ? 1 : 0);
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

// The scorer's view of head h's gathered candidates (cand_[h]); the
// context is set by the caller that needs one.
ScoreInput PolicyCache::score_input(int layer, int h, int32_t keep) const {
  const Candidates& c = cand_[h];
  ScoreInput in;
  in.layer = layer;
  in.kv_head = h;
  in.n = c.size();
  in.src = c.src.data();
  in.pos = c.pos.data();
  in.stats = c.stats.data();
  in.layout = store_->config().stats;
  in.now = store_->tokens_seen();
  in.keep = keep;
  in.seed = ctx_.seed;
  in.decode = step_decode_;
  return in;
}

// CaM: the scorer plans, over the head's candidates, which evicted values
// fold into which kept ones (order_[0, drop) are the evicted candidates).
void PolicyCache::merge_before_eviction(int seq, int layer, int h, int32_t drop) {
  const Candidates& c = cand_[h];
  kept_.assign(c.size(), 1);
  for (int32_t i = 0; i < drop; ++i) kept_[order_[i]] = 0;
  const ScoreInput in = score_input(layer, h, c.size() - drop);
  merges_.clear();
  scorer_->value_merges(in, kept_.data(), merges_);
  store_->merge_values(seq, layer, h, c.refs, merges_);
}

void PolicyCache::maintain_layer(int seq, int layer, bool use_scorer) {
  if (!acts_on(layer)) return;
  const int H = ctx_.shape.n_kv_heads;
  cand_.resize(H);
  prio_.resize(H);
  int64_t total = 0;
  bool over = false;
  const int32_t lb = evict_above(layer);
  if (!mixed_) {
    // Nothing to do while every head is within its budget: count, copy
    // nothing; first by the segments' sizes (every sequence's entries, O(1)),
    // then, only if those exceed it, by the sequence's own entries.
    for (int pass = 0; pass < 2; ++pass) {
      int64_t n_total = 0;
      bool any_over = false;
      for (int h = 0; h < H; ++h) {
        const int32_t n = pass == 0 ? store_->candidates_at_most(layer, h)
                                    : store_->count_candidates(seq, layer, h);
        n_total += n;
        any_over = any_over || (n > lb && !scorer_->full_head(layer, h));
      }
      if (allocator_->needs_priorities() ? n_total <= int64_t{main_budget_of(layer)} * H
                                         : !any_over)
        return;
    }
  }
  for (int h = 0; h < H; ++h) {
    store_->gather(seq, layer, h, cand_[h]);
    total += cand_[h].size();
    over = over || (cand_[h].size() > lb && !scorer_->full_head(layer, h));
  }
  if (allocator_->needs_priorities()) over = total > int64_t{main_budget_of(layer)} * H;
  const bool evict = use_scorer && scorer_->evicts() && over && !eviction_paused_;
  if (!evict && !mixed_) return;

  // Keep-priorities per head.
  for (int h = 0; h < H; ++h) {
    const Candidates& c = cand_[h];
    auto& p = prio_[h];
    p.resize(c.size());
    if (!use_scorer) {
      for (int32_t i = 0; i < c.size(); ++i) p[i] = static_cast<float>(c.src[i]);
      continue;
    }
    ScoreInput in = score_input(layer, h, std::min(lb, c.size()));
    HeadContext context(*store_, window_, qstats_, seq, layer, h);
    in.context = &context;
    if (!importance_.empty()) {
      const auto& table = importance_[layer * H + h];
      gathered_.resize(c.size());
      for (int32_t i = 0; i < c.size(); ++i)
        gathered_[i] = c.src[i] < static_cast<int32_t>(table.size()) ? table[c.src[i]] : 0.0f;
      in.importance = gathered_.data();
    }
    scorer_->priorities(in, p.data());
  }
  if (use_scorer && scorer_->per_layer() && H > 1) {
    // One token set per layer: sum each entry's priority over the heads.
    by_src_.clear();
    for (int h = 0; h < H; ++h)
      for (int32_t i = 0; i < cand_[h].size(); ++i)
        by_src_.emplace_back(cand_[h].src[i], prio_[h][i]);
    std::sort(by_src_.begin(), by_src_.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    size_t w = 0;
    for (size_t i = 0; i < by_src_.size(); ++i) {
      if (w > 0 && by_src_[w - 1].first == by_src_[i].first)
        by_src_[w - 1].second += by_src_[i].second;
      else
        by_src_[w++] = by_src_[i];
    }
    by_src_.resize(w);
    for (int h = 0; h < H; ++h)
      for (int32_t i = 0; i < cand_[h].size(); ++i) {
        auto it = std::lower_bound(by_src_.begin(), by_src_.end(), cand_[h].src[i],
                                   [](const auto& e, int32_t s) { return e.first < s; });
        prio_[h][i] = it->second;
      }
  }

  // Remember each head's priorities by stream index for mixed's demotion
  // after eviction (eviction moves entries around).
  if (mixed_) {
    head_prio_.resize(H);
    for (int h = 0; h < H; ++h) {
      auto& hp = head_prio_[h];
      hp.clear();
      for (int32_t i = 0; i < cand_[h].size(); ++i) hp.emplace_back(cand_[h].src[i], prio_[h][i]);
      std::sort(hp.begin(), hp.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
    }
  }

  if (evict) {
    spans_.resize(H);
    for (int h = 0; h < H; ++h) spans_[h] = prio_[h];
    keep_.resize(H);
    AllocationInput ai;
    ai.layer = layer;
    ai.n_layers = ctx_.shape.n_layers;
    ai.budget = main_budget_of(layer);
    ai.reserved = reserved_;
    ai.priorities = spans_;
    allocator_->keep_counts(ai, keep_);
    for (int h = 0; h < H; ++h)
      if (scorer_->full_head(layer, h)) keep_[h] = cand_[h].size();
    for (int h = 0; h < H; ++h) {
      const Candidates& c = cand_[h];
      const int32_t n = c.size(), drop = n - keep_[h];
      if (drop <= 0) continue;
      const auto& p = prio_[h];
      order_.resize(n);
      std::iota(order_.begin(), order_.end(), 0);
      // Lowest priority first; ties: the older entry goes first.
      std::nth_element(
          order_.begin(), order_.begin() + (drop - 1), order_.end(),
          [&](int32_t a, int32_t b) { return p[a] != p[b] ? p[a] < p[b] : c.src[a] < c.src[b]; });
      // Evicted in position order, so the cold tier's pages hold neighbouring
      // tokens and their key bounds stay tight.
      std::sort(order_.begin(), order_.begin() + drop, [&](int32_t a, int32_t b) {
        return c.pos[a] != c.pos[b] ? c.pos[a] < c.pos[b] : c.src[a] < c.src[b];
      });
      if (scorer_->merges_values()) merge_before_eviction(seq, layer, h, drop);
      refs_.clear();
      for (int32_t i = 0; i < drop; ++i) refs_.push_back(c.refs[order_[i]]);
      store_->evict(seq, layer, h, refs_);
      if (scorer_->contiguous_positions()) store_->renumber_contiguous(seq, layer, h);
    }
  }

  if (mixed_) {
    // Precision by importance: the highest-priority share of the kept
    // entries stays in f32, the rest is encoded (and stays encoded).
    for (int h = 0; h < H; ++h) {
      Candidates& c = cand_[h];
      const auto& hp = head_prio_[h];
      if (evict) store_->gather(seq, layer, h, c);
      int32_t full = 0;
      for (const auto& r : c.refs) full += r.seg == kIncoming;
      const int32_t target = static_cast<int32_t>(std::lround(mixed_full_ * c.size()));
      if (full <= target) continue;
      order_.clear();
      for (int32_t i = 0; i < c.size(); ++i)
        if (c.refs[i].seg == kIncoming) order_.push_back(i);
      auto prio_of = [&](int32_t i) {
        auto it = std::lower_bound(hp.begin(), hp.end(), c.src[i],
                                   [](const auto& e, int32_t s) { return e.first < s; });
        return it != hp.end() && it->first == c.src[i] ? it->second : static_cast<float>(c.src[i]);
      };
      std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
        const float pa = prio_of(a), pb = prio_of(b);
        return pa != pb ? pa < pb : c.src[a] < c.src[b];
      });
      refs_.clear();
      for (int32_t i = 0; i < full - target; ++i) refs_.push_back(c.refs[order_[i]]);
      store_->demote(layer, h, refs_);
    }
  }
}

// --- queries, sequences, sharing ---

MemoryReport PolicyCache::memory() const {
  MemoryReport r = store_->memory();
  r.policy_state += window_.bytes() + qstats_.bytes();
  for (const auto& t : importance_) r.policy_state += t.size() * sizeof(float);
  return r;
}

double PolicyCache::restore_bytes_per_step() const {
  const ColdTier* cold = store_->cold();
  return cold ? static_cast<double>(cold->bound_bytes()) / restore_every_ : 0.0;
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
  if (scorer_->contiguous_positions())
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
  if (needs_.query_stats)
    throw InputError("import_from: '" + to_string(spec_) +
                     "' needs query statistics of the whole prompt, which a full cache does not "
                     "keep; prefill it from scratch");
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
  // The kept queries, newest last.
  window_.take_newest(full.window_);
  step_decode_ = full.step_decode_;
  decode_steps_ = full.decode_steps_;
  if (streaming())
    for (int s = 0; s < CacheStore::kMaxSeqs; ++s)
      if (store_->known_sequences() & (uint64_t{1} << s)) maintain(s);
}

int PolicyCache::query_ring_capacity(const Scorer& scorer, const PolicySpec& spec,
                                     int keep_queries) {
  const bool pages = scorer.page() > 0 || spec.extra("offload") != nullptr;
  return std::max({scorer.needs().window_queries, pages ? 1 : 0, keep_queries});
}

ScorerNeeds PolicyCache::scorer_needs(const PolicySpec& spec) {
  return spec.scorer.info().make_scorer(spec.scorer)->needs();
}

bool PolicyCache::prefill_matches_full(const PolicySpec& spec) {
  // A full cache keeps no query statistics to hand over.
  if (scorer_needs(spec).query_stats) return false;
  // Lossless storage, and extras that act only when maintenance evicts
  // (offload moves evicted entries to the cold tier, merge folds them).
  if (spec.storage.name != "f32") return false;
  for (const auto& e : spec.extras)
    if (e.name != "offload" && e.name != "merge") return false;
  return true;
}

PolicyCache::ImportNeeds PolicyCache::import_needs() const {
  return {needs_.attention, query_ring_capacity(*scorer_, spec_, 0)};
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
