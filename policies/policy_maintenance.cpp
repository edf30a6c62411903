// PolicyCache's maintenance of one layer: count, gather, score, allocate,
// evict, with the policy's parts (policies/part.h) called at each point.
#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>

#include "model/common/error.h"
#include "policies/head_context.h"
#include "policies/part.h"
#include "policies/policy_cache.h"

namespace kvbench {

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

bool PolicyCache::keeps_all(int layer, int kv_head) const {
  for (const auto& p : parts_)
    if (p->keeps_all(layer, kv_head)) return true;
  return false;
}

void PolicyCache::maintain_layer(int seq, int layer, bool use_scorer) {
  if (!acts_on(layer)) return;
  const int32_t limit = evict_above(layer);
  if (!maintains_always_ && within_budget(seq, layer, limit)) return;
  const bool over = gather_layer(seq, layer, limit);
  const bool evict = use_scorer && scorer_->evicts() && over && !eviction_paused_;
  if (!evict && !maintains_always_) return;
  // The heads' views (K/V decoded only when asked), shared by the scorer
  // and the parts until the first eviction changes the heads.
  std::vector<HeadContext> contexts;
  open_contexts(contexts, seq, layer);
  score_layer(seq, layer, limit, use_scorer);
  LayerWork work = layer_work(seq, layer);
  if (use_scorer)
    for (const auto& p : parts_) p->combine(work);
  for (const auto& p : parts_) p->before_evictions(work);
  if (evict) evict_layer(seq, layer);
  contexts_.clear();
  work.contexts = {};
  for (const auto& p : parts_) p->after_evictions(work, evict, *store_);
}

void PolicyCache::open_contexts(std::vector<HeadContext>& views, int seq, int layer) {
  const int H = ctx_.shape.n_kv_heads;
  views.reserve(H);
  contexts_.clear();
  for (int h = 0; h < H; ++h) {
    views.emplace_back(*store_, window_, qstats_, seq, layer, h);
    contexts_.push_back(&views.back());
  }
}

LayerWork PolicyCache::layer_work(int seq, int layer) {
  LayerWork w{seq,         layer,  cand_, prio_,     pairs_,
              head_pairs_, order_, refs_, contexts_, ctx_.output_projection.get()};
  w.memo = memo_slot(layer);
  return w;
}

MemoSlot PolicyCache::memo_slot(int layer) {
  if (!memo_ || !memo_layers_[layer]) return {};
  return {memo_, &memo_family_, store_->tokens_seen(), ctx_.seed, &memo_ns_.ns, &policy_ns_.ns};
}

void PolicyCache::maintain_across_layers(int seq) {
  const int L = ctx_.shape.n_layers, H = ctx_.shape.n_kv_heads;
  bool over = false;
  for (int l = 0; l < L && !over; ++l) over = acts_on(l) && !within_budget(seq, l, evict_above(l));
  if (!over || !scorer_->evicts() || eviction_paused_) {
    // Nothing to evict: each layer as alone (parts that act without eviction).
    for (int l = 0; l < L; ++l) maintain_layer(seq, l, true);
    return;
  }
  // Every acting layer scored (its parts' combine and before_evictions run
  // while its views are valid) before any eviction.
  layer_cand_.resize(L);
  layer_prio_.resize(L);
  for (int l = 0; l < L; ++l) {
    if (!acts_on(l)) continue;
    gather_layer(seq, l, evict_above(l));
    std::vector<HeadContext> contexts;
    open_contexts(contexts, seq, l);
    score_layer(seq, l, evict_above(l), true);
    LayerWork work = layer_work(seq, l);
    for (const auto& p : parts_) p->combine(work);
    for (const auto& p : parts_) p->before_evictions(work);
    contexts_.clear();
    std::swap(layer_cand_[l], cand_);
    std::swap(layer_prio_[l], prio_);
  }
  // One allocation over every head that may lose entries.
  std::vector<std::span<const float>> prio;
  std::vector<std::span<const int32_t>> src;
  std::vector<int32_t> keep;
  int64_t entries = 0;
  for (int l = 0; l < L; ++l)
    if (acts_on(l))
      for (int h = 0; h < H; ++h)
        if (!keeps_all(l, h)) {
          prio.emplace_back(layer_prio_[l][h]);
          src.emplace_back(layer_cand_[l][h].src);
          entries += layer_cand_[l][h].size();
        }
  keep.resize(prio.size());
  CrossLayerInput in;
  in.keep = keep_across_layers(entries);
  in.priorities = prio;
  in.src = src;
  allocator_->keep_counts_across(in, keep);
  // Each layer's evictions, with its parts.
  size_t next = 0;
  for (int l = 0; l < L; ++l) {
    if (!acts_on(l)) continue;
    std::swap(layer_cand_[l], cand_);
    std::swap(layer_prio_[l], prio_);
    keep_.resize(H);
    for (int h = 0; h < H; ++h) keep_[h] = keeps_all(l, h) ? cand_[h].size() : keep[next++];
    contexts_.clear();  // the views of a layer whose scoring is over
    LayerWork work = layer_work(seq, l);
    for (const auto& p : parts_) p->allocate(work, keep_);
    for (int h = 0; h < H; ++h) evict_head(seq, l, h, keep_[h]);
    for (const auto& p : parts_) p->after_evictions(work, true, *store_);
  }
  layer_cand_.clear();
  layer_prio_.clear();
}

int64_t PolicyCache::keep_across_layers(int64_t entries) const {
  const Budget& b = scorer_->budget_setting();
  int64_t full = 0, budget = 0;
  for (int l = 0; l < ctx_.shape.n_layers; ++l) {
    if (!acts_on(l)) continue;
    // What a head of the layer holds once the context is in (a local
    // layer: its window).
    const int64_t c =
        window(l) > 0 ? std::min<int64_t>(ctx_.context_tokens, window(l)) : ctx_.context_tokens;
    for (int h = 0; h < ctx_.shape.n_kv_heads; ++h)
      if (!keeps_all(l, h)) {
        full += c;
        budget += evict_above(l);
      }
  }
  if (b.ratio && full > 0)
    budget = full - static_cast<int64_t>(static_cast<double>(full) * (1.0 - b.value));
  return std::min(entries, budget);
}

// Nothing to do while every head is within its budget: count, copy nothing;
// first by the segments' sizes (every sequence's entries, O(1)), then, only
// if those exceed it, by the sequence's own entries.
bool PolicyCache::within_budget(int seq, int layer, int32_t limit) const {
  const int H = ctx_.shape.n_kv_heads;
  for (int pass = 0; pass < 2; ++pass) {
    int64_t total = 0;
    bool any_over = false;
    for (int h = 0; h < H; ++h) {
      const int32_t n = pass == 0 ? store_->candidates_at_most(layer, h)
                                  : store_->count_candidates(seq, layer, h);
      total += n;
      any_over = any_over || (n > limit && !keeps_all(layer, h));
    }
    if (allocator_->needs_priorities() ? total <= int64_t{main_budget_of(layer)} * H : !any_over)
      return true;
  }
  return false;
}

// Every head's candidates into cand_; whether the layer is over its budget.
bool PolicyCache::gather_layer(int seq, int layer, int32_t limit) {
  const int H = ctx_.shape.n_kv_heads;
  cand_.resize(H);
  prio_.resize(H);
  int64_t total = 0;
  bool over = false;
  for (int h = 0; h < H; ++h) {
    store_->gather(seq, layer, h, cand_[h]);
    total += cand_[h].size();
    over = over || (cand_[h].size() > limit && !keeps_all(layer, h));
  }
  if (allocator_->needs_priorities()) over = total > int64_t{main_budget_of(layer)} * H;
  return over;
}

// Keep-priorities per head: the scorer's, or recency when maintenance runs
// without it (mixed's demotion between evictions).
void PolicyCache::score_layer(int seq, int layer, int32_t limit, bool use_scorer) {
  const int H = ctx_.shape.n_kv_heads;
  // Only a layer's first scoring in this cache reads the imported state
  // unchanged: only that one may share the memo's rows.
  if (scored_layers_.size() != static_cast<size_t>(ctx_.shape.n_layers))
    scored_layers_.assign(ctx_.shape.n_layers, 0);
  const bool first = !scored_layers_[layer];
  scored_layers_[layer] = 1;
  if (memo_) memo_layers_[layer] = first && use_scorer;
  const MemoSlot slot = memo_slot(layer);
  const bool share = slot.memo && !scorer_->priorities_read_keep();
  for (int h = 0; h < H; ++h) {
    const Candidates& c = cand_[h];
    auto& p = prio_[h];
    p.resize(c.size());
    if (!use_scorer) {
      for (int32_t i = 0; i < c.size(); ++i) p[i] = static_cast<float>(c.src[i]);
      continue;
    }
    ScoreInput in = score_input(layer, h, std::min(limit, c.size()));
    in.context = contexts_[h];
    if (!importance_.empty()) {
      const auto& table = importance_[layer * H + h];
      // A hindsight table may be missing (no answer: nothing is known), a
      // reconstruction table may not: the scores are the pass's.
      if (needs_.reconstruction && table.empty())
        throw InputError("policy '" + to_string(spec_) +
                         "': its scores come from a reconstruction pass over the prompt, which "
                         "the caller did not run (this command does not support it)");
      gathered_.resize(c.size());
      for (int32_t i = 0; i < c.size(); ++i)
        gathered_[i] = c.src[i] < static_cast<int32_t>(table.size()) ? table[c.src[i]] : 0.0f;
      in.importance = gathered_.data();
    }
    if (!share) {
      scorer_->priorities(in, p.data());
      continue;
    }
    const PriorityMemo::Hit hit =
        slot.memo->find(*slot.family, MemoKind::Priorities, layer, h, c.src, in.now, in.seed);
    if (hit.values) {
      for (int32_t i = 0; i < c.size(); ++i) p[i] = static_cast<float>((*hit.values)[i]);
      slot.charge(hit.seconds);
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    scorer_->priorities(in, p.data());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    memo_scratch_.assign(p.begin(), p.end());
    slot.memo->store(*slot.family, MemoKind::Priorities, layer, h, c.src, in.now, in.seed,
                     memo_scratch_, seconds);
  }
}

// The allocator's keep count per head (heads that keep everything keep
// everything), then each head's eviction.
void PolicyCache::evict_layer(int seq, int layer) {
  const int H = ctx_.shape.n_kv_heads;
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
    if (keeps_all(layer, h)) keep_[h] = cand_[h].size();
  LayerWork work = layer_work(seq, layer);
  work.guaranteed = allocator_->guaranteed(ai);
  for (const auto& p : parts_) p->allocate(work, keep_);
  contexts_.clear();  // eviction changes the heads' views
  for (int h = 0; h < H; ++h) evict_head(seq, layer, h, keep_[h]);
}

void PolicyCache::evict_head(int seq, int layer, int h, int32_t keep) {
  const Candidates& c = cand_[h];
  const int32_t n = c.size(), drop = n - keep;
  if (drop <= 0) return;
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
  const ScoreInput in = score_input(layer, h, n - drop);
  const HeadEviction e{seq, layer, h, c, order_, drop, in, *store_};
  for (const auto& part : parts_) part->before_eviction(e);
  refs_.clear();
  for (int32_t i = 0; i < drop; ++i) refs_.push_back(c.refs[order_[i]]);
  store_->evict(seq, layer, h, refs_);
  for (const auto& part : parts_) part->after_eviction(e);
}

}  // namespace kvbench
