// The complete state of a PolicyCache as a binary stream (see state_io.h for
// the encoding): the one place that knows the layout of a snapshot's payload.
//
//   PCAC  policy spec (canonical string), CacheContext, step flags, decode
//         counter, query rings [n_layers], oracle importance tables
//   STOR  stream counter, known sequences, evicted-position marks [64],
//         last step's sequence; per head (layer-major) and slot (main,
//         incoming, restored, summary): kind byte, then the segment
//           ROWS  codec, group, entry metadata, K rows, V rows (encoded bytes)
//           KIVI  group, residual, metadata, quantized / full-precision
//                 counts, key codes, block ids, block table, free list,
//                 full-precision keys, value codes, full-precision values
//         then the cold tier
//           COLD  codec, group, page size; per head its pages: metadata,
//                 K rows, V rows
//   SEND / PEND  end markers
//   entry metadata: n_stats, positions[n], stream indices[n], sequence
//                   sets[n], statistics[n * n_stats]
//
// Reading goes into a freshly created cache: the spec and context come first
// and PolicyCache::create makes the configuration, which every later part is
// checked against. Scratch buffers and views are not state and are not
// written; nor is the policy's wall time.
#include <algorithm>
#include <cassert>
#include <limits>
#include <set>

#include "policies/policy_cache.h"
#include "policies/state_io.h"

namespace kvbench {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
const char* const kSlotNames[kSlots] = {"main", "incoming", "restored", "summary"};

void save_meta(StateWriter& out, const EntryMeta& m) {
  out.i32(m.n_stats);
  out.array(m.pos);
  out.array(m.src);
  out.array(m.seqs);
  out.array(m.stats);
}

// Into an empty EntryMeta whose n_stats is the configuration's.
void load_meta(StateReader& in, EntryMeta& m) {
  const int32_t ns = in.i32("statistics per entry");
  if (ns != m.n_stats)
    in.fail(std::to_string(ns) + " statistics per entry where the policy keeps " +
            std::to_string(m.n_stats));
  in.array_upto(m.pos, kInt32Max, "positions");
  in.check_positions(m.pos, 0, "positions");
  const uint64_t n = m.pos.size();
  in.array(m.src, n, "stream indices");
  in.array(m.seqs, n, "sequence sets");
  in.array(m.stats, n * static_cast<uint64_t>(ns), "statistics");
}

// Every entry belongs to a known sequence, and its stream index was handed
// out already (summary entries carry -1).
void check_entries(StateReader& in, const EntryMeta& m, uint64_t known, int64_t next_src,
                   bool summary) {
  for (int32_t i = 0; i < m.size(); ++i) {
    if (m.seqs[i] == 0 || (m.seqs[i] & ~known))
      in.fail("entry " + std::to_string(i) + " belongs to no known sequence");
    const int32_t s = m.src[i];
    if (summary ? s != -1 : (s < 0 || s >= next_src))
      in.fail("entry " + std::to_string(i) + " has stream index " + std::to_string(s) + " (" +
              std::to_string(next_src) + " tokens streamed)");
  }
}

std::string kind_name(uint8_t kind) {
  return kind <= static_cast<uint8_t>(CodecKind::Int2)
             ? std::string(codec_name(static_cast<CodecKind>(kind)))
             : "codec #" + std::to_string(kind);
}

void check_codec(StateReader& in, const RowCodec& codec, uint8_t kind, int32_t group) {
  if (kind != static_cast<uint8_t>(codec.kind()) || group != codec.group())
    in.fail("rows in " + kind_name(kind) + " (group " + std::to_string(group) +
            ") where the policy stores " + std::string(codec_name(codec.kind())) + " (group " +
            std::to_string(codec.group()) + ")");
}

uint64_t checked_product(std::initializer_list<uint64_t> factors) {
  uint64_t p = 1;
  for (uint64_t f : factors) {
    if (f != 0 && p > std::numeric_limits<uint64_t>::max() / f)
      return std::numeric_limits<uint64_t>::max();
    p *= f;
  }
  return p;
}

// A RoPE configuration as save_state writes it (the model's, then the local
// layers' where the model has them, in the same fields). `name` ("RoPE",
// "local RoPE") starts each field's name in errors.
void read_rope(StateReader& in, RopeConfig& r, int head_dim, const std::string& name) {
  r.n_dims = in.i32((name + " dimensions").c_str());
  r.freq_base = in.f32((name + " base").c_str());
  r.freq_scale = in.f32((name + " scale").c_str());
  in.array_upto(r.freq_factors, static_cast<uint64_t>(head_dim / 2),
                (name + " frequency factors").c_str());
  r.neox = in.boolean((name + " pairing").c_str());
  const int rotated = r.n_dims > 0 ? r.n_dims : head_dim;
  if (r.n_dims < 0 || r.n_dims > head_dim || r.n_dims % 2 != 0 ||
      (!r.freq_factors.empty() && static_cast<int>(r.freq_factors.size()) != rotated / 2))
    in.fail("invalid RoPE configuration");
}

}  // namespace

// --- segments ---

void RowSegment::save_state(StateWriter& out) const {
  out.tag(state_tag("ROWS"));
  out.u8(static_cast<uint8_t>(codec_.kind()));
  out.i32(codec_.group());
  save_meta(out, meta);
  if (kref_.empty()) {
    out.array(k_);
    out.array(v_);
    return;
  }
  RowSegment owned(*this);  // referenced rows are saved as rows of its own
  owned.materialize();
  out.array(owned.k_);
  out.array(owned.v_);
}

void RowSegment::load_state(StateReader& in) {
  assert(size() == 0);
  in.expect_tag(state_tag("ROWS"), "row segment");
  const uint8_t kind = in.u8("codec");
  const int32_t group = in.i32("codec group");
  check_codec(in, codec_, kind, group);
  load_meta(in, meta);
  const uint64_t bytes = static_cast<uint64_t>(size()) * codec_.row_bytes();
  in.array(k_, bytes, "key rows");
  in.array(v_, bytes, "value rows");
}

void KiviSegment::save_state(StateWriter& out) const {
  out.tag(state_tag("KIVI"));
  out.i32(group_);
  out.i32(residual_);
  out.u8(static_cast<uint8_t>(keys_));
  out.u8(static_cast<uint8_t>(values_));
  save_meta(out, meta);
  out.i32(kq_);
  out.i32(vq_);
  out.array(kcodes_);
  out.array(kblock_);
  out.u64(blocks_.size());
  for (const Block& b : blocks_) {
    out.i32(b.count);
    out.array(b.params);
  }
  out.array(free_blocks_);
  out.i32(live_blocks_);
  out.array(kfull_);
  out.array(vcodes_);
  out.array(vfull_);
}

void KiviSegment::load_state(StateReader& in) {
  kparams_stale_ = true;
  assert(size() == 0);
  in.expect_tag(state_tag("KIVI"), "KIVI segment");
  const int32_t group = in.i32("KIVI group"), residual = in.i32("KIVI residual");
  if (group != group_ || residual != residual_)
    in.fail("KIVI group " + std::to_string(group) + " / residual " + std::to_string(residual) +
            " where the policy uses " + std::to_string(group_) + " / " + std::to_string(residual_));
  const uint8_t keys = in.u8("KIVI keys"), values = in.u8("KIVI values");
  if (keys != static_cast<uint8_t>(keys_) || values != static_cast<uint8_t>(values_))
    in.fail("KIVI keys / values mode " + std::to_string(keys) + " / " + std::to_string(values) +
            " where the policy uses " + std::to_string(static_cast<int>(keys_)) + " / " +
            std::to_string(static_cast<int>(values_)));
  load_meta(in, meta);
  const int32_t n = size();
  const int64_t code_row = key_code_row();
  const bool blocks = keys_ == KiviKeys::Channel;
  kq_ = in.count32("quantized keys", 0, n);
  vq_ = in.count32("quantized values", 0, n);
  in.array(kcodes_, static_cast<uint64_t>(kq_) * code_row, "key codes");
  in.array(kblock_, blocks ? static_cast<uint64_t>(kq_) : 0, "key blocks");
  const uint64_t n_blocks = in.u64("key block count");
  in.fit(n_blocks, 12, "key block table");  // each block: count (4) + an array count (8)
  blocks_.resize(n_blocks);
  for (Block& b : blocks_) {
    b.count = in.i32("key block entries");
    if (b.count < 0 || b.count > kq_)
      in.fail("a key block with " + std::to_string(b.count) + " entries");
    in.array(b.params, b.count > 0 ? 2 * static_cast<uint64_t>(dim_) : 0, "key block parameters");
  }
  // Each quantized key's block exists and counts it; free blocks are exactly
  // the empty ones.
  std::vector<int32_t> refs(n_blocks, 0);
  for (int32_t id : kblock_) {
    if (id < 0 || static_cast<uint64_t>(id) >= n_blocks)
      in.fail("key block id " + std::to_string(id) + " out of range");
    ++refs[id];
  }
  int32_t live = 0;
  for (uint64_t b = 0; b < n_blocks; ++b) {
    if (refs[b] != blocks_[b].count)
      in.fail("key block " + std::to_string(b) + " counts the wrong entries");
    live += blocks_[b].count > 0;
  }
  in.array_upto(free_blocks_, n_blocks, "free key blocks");
  std::set<int32_t> seen;
  for (int32_t id : free_blocks_)
    if (id < 0 || static_cast<uint64_t>(id) >= n_blocks || blocks_[id].count != 0 ||
        !seen.insert(id).second)
      in.fail("free key block list is inconsistent");
  if (static_cast<int64_t>(seen.size()) + live != static_cast<int64_t>(n_blocks))
    in.fail("an empty key block is missing from the free list");
  live_blocks_ = in.i32("live key blocks");
  if (live_blocks_ != live) in.fail("the live key block count is wrong");
  in.array(kfull_, static_cast<uint64_t>(n - kq_) * dim_, "full-precision keys");
  if (keys_ == KiviKeys::F32 && kq_ != 0)
    in.fail("quantized keys in a cache that keeps keys in f32");
  if (values_ == KiviValues::F32 && vq_ != 0)
    in.fail("quantized values in a cache that keeps values in f32");
  in.array(vcodes_, static_cast<uint64_t>(vq_) * vcodec_.row_bytes(), "value codes");
  in.array(vfull_, static_cast<uint64_t>(n - vq_) * dim_, "full-precision values");
}

// --- cold tier ---

void ColdTier::save_state(StateWriter& out) const {
  out.tag(state_tag("COLD"));
  out.u8(static_cast<uint8_t>(codec_.kind()));
  out.i32(codec_.group());
  out.i32(page_);
  out.u64(heads_.size());
  const int64_t rb = codec_.row_bytes();
  for (const ColdHead& h : heads_) {
    out.u64(h.pages.size());
    for (const ColdPage& p : h.pages) {
      save_meta(out, p.meta);
      const size_t bytes = static_cast<size_t>(p.meta.size() * rb);
      out.array(std::span<const uint8_t>(key_bytes(p, 0), bytes));
      out.array(std::span<const uint8_t>(value_bytes(p, 0), bytes));
    }
  }
}

void ColdTier::load_state(StateReader& in) {
  in.expect_tag(state_tag("COLD"), "cold tier");
  const uint8_t kind = in.u8("cold codec");
  const int32_t group = in.i32("cold codec group");
  check_codec(in, codec_, kind, group);
  const int32_t page = in.i32("cold page size");
  if (page != page_)
    in.fail("cold pages of " + std::to_string(page) + " entries where the policy uses " +
            std::to_string(page_));
  const uint64_t n_heads = in.u64("cold heads");
  if (n_heads != heads_.size()) in.fail("the cold tier has " + std::to_string(n_heads) + " heads");
  const int64_t rb = codec_.row_bytes();
  std::vector<uint8_t> rows;
  for (ColdHead& h : heads_) {
    assert(h.pages.empty());
    const uint64_t n_pages = in.u64("cold pages");
    in.fit(n_pages, 4 + 4 * 8, "cold pages");  // each page: n_stats + four array counts
    for (uint64_t i = 0; i < n_pages; ++i) {
      ColdPage p;
      p.meta.n_stats = n_stats_;
      load_meta(in, p.meta);
      const int32_t n = p.meta.size();
      if (n < 1 || n > page_)
        in.fail("a cold page with " + std::to_string(n) + " entries (pages hold 1.." +
                std::to_string(page_) + ")");
      p.slot = arena_->alloc();
      h.pages.push_back(std::move(p));  // owned by the tier from here on (released with it)
      ColdPage& q = h.pages.back();
      in.array(rows, static_cast<uint64_t>(n) * rb, "cold key rows");
      std::copy(rows.begin(), rows.end(), arena_->slot(q.slot));
      in.array(rows, static_cast<uint64_t>(n) * rb, "cold value rows");
      std::copy(rows.begin(), rows.end(), arena_->slot(q.slot) + page_ * rb);
      q.kmin.assign(codec_.dim(), 0.0f);
      q.kmax.assign(codec_.dim(), 0.0f);
      recompute_bounds(q);
    }
  }
}

// --- the store ---

void CacheStore::save_state(StateWriter& out) const {
  if (in_step_) throw InputError("snapshot: a cache cannot be saved inside a step");
  out.tag(state_tag("STOR"));
  out.i64(next_src_);
  out.u64(known_);
  out.array(std::span<const int32_t>(evicted_max_));
  out.i32(step_seq_);
  out.boolean(step_decode_);
  out.u64(heads_.size());
  for (const HeadState& hs : heads_)
    for (int slot = 0; slot < kSlots; ++slot) {
      const Segment* s = hs.segs[slot].get();
      out.u8(!s ? 0 : dynamic_cast<const KiviSegment*>(s) ? 2 : 1);
      if (s) s->save_state(out);
    }
  out.boolean(static_cast<bool>(cold_));
  if (cold_) cold_->save_state(out);
  out.tag(state_tag("SEND"));
}

void CacheStore::load_state(StateReader& in) {
  assert(!in_step_ && hot_total() == 0 && known_ == 0);
  in.set_context("store");
  in.expect_tag(state_tag("STOR"), "store");
  next_src_ = in.count("tokens streamed", 0, kInt32Max);
  known_ = in.u64("known sequences");
  std::vector<int32_t> em;
  in.array(em, kMaxSeqs, "evicted positions");
  in.check_positions(em, -1, "evicted positions");  // per sequence; -1: none evicted
  for (int s = 0; s < kMaxSeqs; ++s)
    if (em[s] >= 0 && !(known_ >> s & 1))  // only a sequence's own eviction sets its mark
      in.fail("evicted positions[" + std::to_string(s) + "] = " + std::to_string(em[s]) +
              " for sequence " + std::to_string(s) + ", which the cache does not know");
  std::copy(em.begin(), em.end(), evicted_max_.begin());
  step_seq_ = static_cast<int>(in.i32("last step's sequence"));
  if (step_seq_ < 0 || step_seq_ >= kMaxSeqs)
    in.fail("last step's sequence " + std::to_string(step_seq_));
  step_decode_ = in.boolean("last step's phase");
  const uint64_t saved_heads = in.u64("heads");
  if (saved_heads != heads_.size())
    in.fail(std::to_string(saved_heads) + " heads where the shape has " +
            std::to_string(heads_.size()));
  const int nkv = shape().n_kv_heads;
  for (size_t h = 0; h < heads_.size(); ++h)
    for (int slot = 0; slot < kSlots; ++slot) {
      in.set_context("layer " + std::to_string(h / nkv) + " KV head " + std::to_string(h % nkv) +
                     " " + kSlotNames[slot] + " segment");
      Segment* s = heads_[h].segs[slot].get();
      const uint8_t want = !s ? 0 : dynamic_cast<const KiviSegment*>(s) ? 2 : 1;
      const uint8_t kind = in.u8("segment kind");
      if (kind != want) {
        static const char* const names[] = {"no", "a row", "a KIVI"};
        in.fail(std::string("the payload has ") + (kind <= 2 ? names[kind] : "an unknown") +
                " segment where the policy makes " + names[want]);
      }
      if (!s) continue;
      s->load_state(in);
      check_entries(in, s->meta, known_, next_src_, slot == kSummary);
    }
  in.set_context("cold tier");
  const bool has_cold = in.boolean("cold tier present");
  if (has_cold != static_cast<bool>(cold_))
    in.fail(has_cold ? "the payload has a cold tier the policy does not make"
                     : "the cold tier is missing");
  if (cold_) {
    cold_->load_state(in);
    for (int h = 0; h < n_heads(); ++h)
      for (const ColdPage& p : cold_->head(h).pages)
        check_entries(in, p.meta, known_, next_src_, false);
  }
  in.set_context("store");
  in.expect_tag(state_tag("SEND"), "end of store");
  recount_positions();  // the arrays were filled directly
}

// --- the cache ---

void PolicyCache::save_state(StateWriter& out) const {
  if (store_->in_step()) throw InputError("snapshot: a cache cannot be saved inside a step");
  out.tag(state_tag("PCAC"));
  out.str(to_string(spec_));
  const KvShape& sh = ctx_.shape;
  out.i32(sh.n_layers);
  out.i32(sh.n_kv_heads);
  out.i32(sh.n_q_heads);
  out.i32(sh.head_dim);
  const auto write_rope = [&out](const RopeConfig& r) {
    out.i32(r.n_dims);
    out.f32(r.freq_base);
    out.f32(r.freq_scale);
    out.array(r.freq_factors);
    out.boolean(r.neox);
  };
  write_rope(ctx_.rope);
  out.array(ctx_.layer_window);
  if (!ctx_.layer_window.empty()) write_rope(ctx_.rope_local);
  out.i64(ctx_.context_tokens);
  out.u64(ctx_.seed);
  out.boolean(ctx_.collect_attention);
  out.i32(ctx_.keep_queries);
  out.boolean(step_decode_);
  out.i64(decode_steps_);
  window_.save(out);
  out.u64(importance_.size());
  for (const auto& t : importance_) out.array(t);
  // Only policies that keep query statistics write them (older snapshots
  // have no policy that does); a full cache's, collected for others to
  // import (CacheContext.query_stats_skip), are not saved.
  if (qstats_.enabled() && needs_.query_stats) qstats_.save(out);
  store_->save_state(out);
  out.tag(state_tag("PEND"));
}

std::unique_ptr<PolicyCache> PolicyCache::load_state(StateReader& in) {
  in.set_context("cache");
  in.expect_tag(state_tag("PCAC"), "cache");
  const std::string spec_text = in.str("policy spec", 4096);
  PolicySpec spec;
  try {
    spec = parse_policy_spec(spec_text);
  } catch (const InputError& e) {
    in.fail("policy spec '" + spec_text + "': " + e.what());
  }
  // Written canonical; anything else is not a payload kvbench wrote.
  if (to_string(spec) != spec_text)
    in.fail("policy spec '" + spec_text + "' is not in canonical form");
  CacheContext ctx;
  KvShape& sh = ctx.shape;
  sh.n_layers = in.i32("layers");
  sh.n_kv_heads = in.i32("KV heads");
  sh.n_q_heads = in.i32("query heads");
  sh.head_dim = in.i32("head_dim");
  if (sh.n_layers < 1 || sh.n_layers > 4096 || sh.n_kv_heads < 1 || sh.n_kv_heads > 4096 ||
      sh.n_q_heads < sh.n_kv_heads || sh.n_q_heads > 65536 || sh.n_q_heads % sh.n_kv_heads != 0 ||
      sh.head_dim < 2 || sh.head_dim > 65536 || sh.head_dim % 2 != 0)
    in.fail("invalid KV shape");
  read_rope(in, ctx.rope, sh.head_dim, "RoPE");
  in.array_upto(ctx.layer_window, static_cast<uint64_t>(sh.n_layers), "layer windows");
  if (!ctx.layer_window.empty()) {
    if (static_cast<int>(ctx.layer_window.size()) != sh.n_layers)
      in.fail("layer windows: " + std::to_string(ctx.layer_window.size()) + " for " +
              std::to_string(sh.n_layers) + " layers");
    for (int32_t w : ctx.layer_window)
      if (w < 0) in.fail("layer windows: a negative window");
    read_rope(in, ctx.rope_local, sh.head_dim, "local RoPE");
  }
  ctx.context_tokens = in.count("context tokens", 0, kInt32Max);
  ctx.seed = in.u64("seed");
  ctx.collect_attention = in.boolean("collect attention");
  ctx.keep_queries = in.count32("kept queries", 0, 1 << 20);

  // Before anything is allocated: a cache of this shape needs at least one
  // kind byte per head and slot, and its query rings are written in full.
  int ring_capacity = 0;
  try {
    ring_capacity = PolicyCache::query_ring_capacity(spec, ctx);
  } catch (const InputError& e) {
    in.fail(std::string("policy: ") + e.what());
  }
  const uint64_t ring = static_cast<uint64_t>(ring_capacity);
  const uint64_t heads = static_cast<uint64_t>(sh.n_layers) * sh.n_kv_heads;
  const uint64_t need =
      checked_product({ring, static_cast<uint64_t>(sh.n_q_heads),
                       static_cast<uint64_t>(sh.head_dim), 4, static_cast<uint64_t>(sh.n_layers)});
  // Query statistics (expected attention) are written in full too.
  bool stats = false;
  try {
    stats = scorer_needs(spec).query_stats;
  } catch (const InputError& e) {
    in.fail(std::string("policy: ") + e.what());
  }
  const uint64_t stats_bytes =
      stats ? checked_product({static_cast<uint64_t>(sh.n_layers),
                               static_cast<uint64_t>(sh.n_q_heads),
                               static_cast<uint64_t>(sh.head_dim) * (sh.head_dim + 1), 8})
            : 0;
  if (need > in.remaining() || heads * kSlots > in.remaining() || stats_bytes > in.remaining())
    in.fail("the payload is too short for a cache of " + std::to_string(heads) + " heads");

  std::unique_ptr<PolicyCache> c;
  try {
    c = create(spec, ctx);
  } catch (const InputError& e) {
    in.fail(std::string("policy: ") + e.what());
  }
  c->step_decode_ = in.boolean("last step's phase");
  // Each decode step streams a token, and a cache streams at most 2^31 - 1
  // (CacheStore::begin_step): the counter then never overflows when it grows.
  c->decode_steps_ = in.count("decode steps", 0, kInt32Max);
  c->window_.load(in, CacheStore::kMaxSeqs);
  if (in.u64("importance tables") != c->importance_.size())
    in.fail("importance tables do not match the policy");
  for (auto& t : c->importance_) in.array_upto(t, kInt32Max, "importance");
  if (c->qstats_.enabled()) c->qstats_.load(in, CacheStore::kMaxSeqs);
  c->store_->load_state(in);
  in.set_context("cache");
  in.expect_tag(state_tag("PEND"), "end of cache");
  return c;
}

}  // namespace kvbench
