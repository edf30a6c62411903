#include "policies/cache_store.h"

#include <cblas.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

#include "policies/cache_errors.h"

namespace kvbench {
namespace {

constexpr uint64_t bit_of(int seq) { return uint64_t{1} << seq; }

RopeConfig usable_rope(RopeConfig r, int head_dim) {
  if (r.n_dims <= 0) r.n_dims = head_dim;
  return r;
}

}  // namespace

// --- StoreView ---

const float* StoreView::rows(bool keys, int32_t begin, int32_t count, float* scratch) const {
  const int32_t end = begin + count;
  for (int p = 0; p < n_pieces_; ++p) {
    const Piece& pc = pieces_[p];
    const int32_t lo = std::max(begin, pc.offset), hi = std::min(end, pc.offset + pc.count);
    if (lo >= hi) continue;
    float* out = scratch + int64_t{lo - begin} * dim_;
    if (!pc.idx) {
      if (keys)
        pc.seg->decode_keys(lo - pc.offset, hi - lo, out);
      else
        pc.seg->decode_values(lo - pc.offset, hi - lo, out);
      continue;
    }
    for (int32_t j = lo; j < hi; ++j, out += dim_) {
      const int32_t local = pc.idx[j - pc.offset];
      if (keys)
        pc.seg->decode_keys(local, 1, out);
      else
        pc.seg->decode_values(local, 1, out);
    }
  }
  return scratch;
}

void StoreView::concat_positions() const {
  view_pos_.resize(n_);
  for (int p = 0; p < n_pieces_; ++p) {
    const auto& pc = pieces_[p];
    const int32_t* pos = pc.seg->meta.pos.data();
    for (int32_t j = 0; j < pc.count; ++j) view_pos_[pc.offset + j] = pos[pc.idx ? pc.idx[j] : j];
  }
  pos_ = view_pos_.data();
}

// --- construction ---

CacheStore::CacheStore(const StoreConfig& c)
    : config_(c),
      rope_(usable_rope(c.rope, c.shape.head_dim)),
      rope_local_(usable_rope(c.rope_local, c.shape.head_dim)),
      inv_freq_(rope_inv_freq(rope_)),
      inv_freq_local_(c.layer_window.empty() ? std::vector<float>() : rope_inv_freq(rope_local_)),
      heads_(static_cast<size_t>(c.shape.n_layers) * c.shape.n_kv_heads) {
  const int hd = c.shape.head_dim;
  const int ns = c.stats.n;
  const RowCodec f32(CodecKind::F32, hd, hd);
  for (auto& hs : heads_) {
    switch (c.layout) {
      case StoreConfig::Layout::Rows:
        hs.segs[kMain] = std::make_unique<RowSegment>(c.codec, ns);
        // Integer codecs stage the step's rows in f32 (encoded at end_step);
        // f16 / bf16 rows are encoded on append (their rounding is negligible,
        // and attention reads them in place).
        if (c.codec.kind() == CodecKind::Int8 || c.codec.kind() == CodecKind::Int4)
          hs.segs[kIncoming] = std::make_unique<RowSegment>(f32, ns);
        break;
      case StoreConfig::Layout::Mixed:
        hs.segs[kMain] = std::make_unique<RowSegment>(c.codec, ns);
        hs.segs[kIncoming] = std::make_unique<RowSegment>(f32, ns);
        break;
      case StoreConfig::Layout::Kivi:
        hs.segs[kMain] = std::make_unique<KiviSegment>(hd, c.kivi_group, c.kivi_residual, ns,
                                                       c.kivi_keys, c.kivi_values);
        break;
    }
    if (c.offload) hs.segs[kRestored] = std::make_unique<RowSegment>(c.codec, ns);
    // The summary keeps its accumulated weight in one more statistic.
    if (c.merge) hs.segs[kSummary] = std::make_unique<RowSegment>(f32, ns + 1);
    hs.view.dim_ = hd;
  }
  if (c.offload)
    cold_ =
        std::make_unique<ColdTier>(c.codec, c.page, n_heads(), c.file_tier, c.dir, c.cold_stats);
  link_positions();
  evicted_max_.fill(-1);
  row_k_.resize(hd);
  row_v_.resize(hd);
}

std::unique_ptr<CacheStore> CacheStore::clone() const {
  auto c = std::unique_ptr<CacheStore>(new CacheStore(*this));
  c->link_positions();  // the copy's segments and pages count into its own index
  return c;
}

void CacheStore::link_positions() {
  // What pos_min / pos_max see: every tier but the restored pages (which
  // point at cold entries, counted there).
  for (auto& hs : heads_)
    for (int slot : {kMain, kIncoming, kSummary})
      if (Segment* seg = hs.segs[slot].get()) seg->meta.index = &positions_;
  if (cold_) cold_->link_positions(&positions_);
}

void CacheStore::recount_positions() {
  positions_.clear();
  link_positions();
  for (const auto& hs : heads_)
    for (int slot : {kMain, kIncoming, kSummary})
      if (const Segment* seg = hs.segs[slot].get()) seg->meta.count_into(positions_);
  if (cold_)
    for (int h = 0; h < n_heads(); ++h)
      for (const auto& p : cold_->head(h).pages) p.meta.count_into(positions_);
}

// --- step protocol ---

void CacheStore::begin_step(int seq, std::span<const int32_t> positions, bool decode) {
  check_seq(seq, false, "step");
  assert(!in_step_);
  if (next_src_ + static_cast<int64_t>(positions.size()) > std::numeric_limits<int32_t>::max())
    throw InputError("cache: more than 2^31 tokens streamed through one cache");
  for (int32_t p : positions)
    if (p < 0 || p > kMaxPosition)
      throw SequenceError("step: position " + std::to_string(p) + " is outside [0, " +
                          std::to_string(kMaxPosition) + "]");
  in_step_ = true;
  step_seq_ = seq;
  step_decode_ = decode;
  step_positions_.assign(positions.begin(), positions.end());
  known_ |= bit_of(seq);
}

void CacheStore::append(int layer, const float* k, const float* v) {
  assert(in_step_);
  const int hd = shape().head_dim, nkv = shape().n_kv_heads;
  const StatLayout& L = config_.stats;
  static thread_local std::vector<float> stats;
  stats.assign(L.n, 0.0f);
  for (int h = 0; h < nkv; ++h) {
    HeadState& hs = head(layer, h);
    Segment& target = hs.segs[kIncoming] ? *hs.segs[kIncoming] : *hs.segs[kMain];
    for (size_t t = 0; t < step_positions_.size(); ++t) {
      const float* kr = k + (static_cast<int64_t>(t) * nkv + h) * hd;
      const float* vr = v + (static_cast<int64_t>(t) * nkv + h) * hd;
      if (L.norm >= 0) {
        double sq = 0.0;
        for (int i = 0; i < hd; ++i) sq += static_cast<double>(kr[i]) * kr[i];
        stats[L.norm] = static_cast<float>(std::sqrt(sq));
      }
      target.append(kr, vr, step_positions_[t], static_cast<int32_t>(next_src_ + t),
                    bit_of(step_seq_), L.n ? stats.data() : nullptr);
    }
  }
}

const KvHeadView& CacheStore::view_for(int seq, int layer, int kv_head) {
  HeadState& hs = head(layer, kv_head);
  StoreView& v = hs.view;
  const uint64_t bit = bit_of(seq);
  v.n_pieces_ = 0;
  v.n_ = 0;
  v.direct_k_ = v.direct_v_ = nullptr;
  v.n_kv_pieces_ = 0;
  for (int slot = 0; slot < kSlots; ++slot) {
    const Segment* seg = hs.segs[slot].get();
    if (!seg || seg->size() == 0) continue;
    const auto& seqs = seg->meta.seqs;
    bool all = true;
    for (int32_t i = 0; i < seg->size() && all; ++i) all = (seqs[i] & bit) != 0;
    StoreView::Piece pc;
    pc.seg = seg;
    pc.slot = slot;
    pc.offset = v.n_;
    if (all) {
      pc.count = seg->size();
    } else {
      auto& vis = hs.visible[slot];
      vis.clear();
      for (int32_t i = 0; i < seg->size(); ++i)
        if (seqs[i] & bit) vis.push_back(i);
      if (vis.empty()) continue;
      pc.idx = vis.data();
      pc.count = static_cast<int32_t>(vis.size());
    }
    v.pieces_[v.n_pieces_++] = pc;
    v.n_ += pc.count;
  }
  if (v.n_pieces_ == 1 && !v.pieces_[0].idx) {
    const Segment* seg = v.pieces_[0].seg;
    v.pos_ = seg->meta.pos.data();
    v.direct_k_ = seg->f32_keys();
    v.direct_v_ = seg->f32_values();
    if (!v.direct_k_ || !v.direct_v_) v.direct_k_ = v.direct_v_ = nullptr;
  } else {
    v.pos_ = nullptr;  // concatenated if asked (positions())
  }
  // The pieces attention reads in place: each segment's rows, through the
  // visible indices when the sequence does not hold every entry. A segment
  // cut into several pieces (KIVI) gives each piece the visible indices
  // inside its rows, relative to its first row; pieces left empty are dropped.
  int n = 0;
  for (int p = 0; p < v.n_pieces_; ++p) {
    const auto& pc = v.pieces_[p];
    const int got = pc.seg->pieces_in_place(v.kv_pieces_.data() + n);
    if (got == 0) {
      n = 0;
      break;
    }
    if (pc.idx && got > 1) {
      auto& rel = hs.visible_in_piece[pc.slot];
      rel.resize(pc.count);
      int32_t a = 0;  // pc.idx ascends: entries before a lie in earlier pieces
      int kept = n;
      for (int i = n; i < n + got; ++i) {
        KvPiece kp = v.kv_pieces_[i];
        const int32_t lo = kp.offset, hi = kp.offset + kp.count;
        int32_t b = a;
        for (; b < pc.count && pc.idx[b] < hi; ++b) rel[b] = pc.idx[b] - lo;
        if (b == a) continue;
        kp.k.index = kp.v.index = rel.data() + a;
        kp.count = b - a;
        kp.pos = nullptr;  // scattered: positions() gathers them
        kp.offset = pc.offset + a;
        v.kv_pieces_[kept++] = kp;
        a = b;
      }
      n = kept;
      continue;
    }
    for (int i = n; i < n + got; ++i) {
      KvPiece& kp = v.kv_pieces_[i];
      if (pc.idx) {
        kp.k.index = kp.v.index = pc.idx;
        kp.count = pc.count;
        kp.pos = nullptr;  // scattered: positions() gathers them
      } else {
        kp.pos = pc.seg->meta.pos.data() + kp.offset;
      }
      kp.offset += pc.offset;
    }
    n += got;
  }
  v.n_kv_pieces_ = n;
  return v;
}

void CacheStore::observe(const AttentionRows& rows) {
  const StatLayout& L = config_.stats;
  if (L.acc < 0 && L.last < 0) return;
  HeadState& hs = head(rows.layer, rows.kv_head);
  const StoreView& v = hs.view;
  assert(rows.n == v.n_ && 0 <= rows.begin && rows.begin <= rows.range_end() &&
         rows.range_end() <= rows.n);
  for (int p = 0; p < v.n_pieces_; ++p) {
    const auto& pc = v.pieces_[p];
    Segment& seg = *hs.segs[pc.slot];
    // The piece's entries [j0, j1) within the reported keys [begin, end).
    const int32_t j0 = std::max(0, rows.begin - pc.offset),
                  j1 = std::min(pc.count, rows.range_end() - pc.offset);
    if (j0 >= j1) continue;
    // Key j's weight summed over the group (in head order): given, or
    // summed here into a buffer (never for concurrent calls: they give it).
    const float* w = rows.group_sum ? rows.group_sum + pc.offset : nullptr;
    if (!w) {
      observe_sum_.assign(pc.count, 0.0f);
      for (int g = 0; g < rows.group; ++g) {
        const float* pr = rows.probs + g * rows.head_stride + pc.offset;
        for (int32_t j = j0; j < j1; ++j) observe_sum_[j] += pr[j];
      }
      w = observe_sum_.data();
    }
    const int ns = seg.meta.n_stats, acc = L.acc, last = L.last;
    float* const stats = seg.meta.stat(0);
    const int32_t* idx = pc.idx;
    // Plain loops over locals: the stores into stats cannot be taken to
    // change what the loop reads.
    for (int32_t j = j0; j < j1; ++j) {
      float* st = stats + int64_t{idx ? idx[j] : j} * ns;
      if (acc >= 0) st[acc] += w[j];
      if (last >= 0) st[last] = w[j];
    }
  }
}

void CacheStore::flush_incoming() {
  if (config_.layout == StoreConfig::Layout::Rows && heads_[0].segs[kIncoming]) {
    const int hd = shape().head_dim;
    for (auto& hs : heads_) {
      auto& in = static_cast<RowSegment&>(*hs.segs[kIncoming]);
      Segment& main = *hs.segs[kMain];
      const float* k = in.f32_keys();
      const float* v = in.f32_values();
      for (int32_t i = 0; i < in.size(); ++i)
        main.append(k + int64_t{i} * hd, v + int64_t{i} * hd, in.meta.pos[i], in.meta.src[i],
                    in.meta.seqs[i], config_.stats.n ? in.meta.stat(i) : nullptr);
      in.clear();
    }
  } else if (config_.layout == StoreConfig::Layout::Kivi) {
    for (auto& hs : heads_) static_cast<KiviSegment&>(*hs.segs[kMain]).flush();
  }
}

void CacheStore::end_step() {
  assert(in_step_);
  flush_incoming();
  next_src_ += static_cast<int64_t>(step_positions_.size());
  in_step_ = false;
}

void CacheStore::import_entries(const CacheStore& full) {
  assert(!in_step_ && hot_total() == 0);
  const int hd = shape().head_dim;
  const StatLayout& L = config_.stats;
  const StatLayout& F = full.config_.stats;
  std::vector<float> st(L.n);
  for (size_t h = 0; h < heads_.size(); ++h) {
    const Segment& from = *full.heads_[h].segs[kMain];
    const float* k = from.f32_keys();
    const float* v = from.f32_values();
    assert(k && v);
    Segment& target =
        heads_[h].segs[kIncoming] ? *heads_[h].segs[kIncoming] : *heads_[h].segs[kMain];
    for (int32_t i = 0; i < from.size(); ++i) {
      const float* kr = k + int64_t{i} * hd;
      if (L.acc >= 0) st[L.acc] = F.acc >= 0 ? from.meta.stat(i)[F.acc] : 0.0f;
      if (L.last >= 0) st[L.last] = F.last >= 0 ? from.meta.stat(i)[F.last] : 0.0f;
      if (L.norm >= 0) {
        double sq = 0.0;
        for (int c = 0; c < hd; ++c) sq += static_cast<double>(kr[c]) * kr[c];
        st[L.norm] = static_cast<float>(std::sqrt(sq));
      }
      target.append(kr, v + int64_t{i} * hd, from.meta.pos[i], from.meta.src[i], from.meta.seqs[i],
                    L.n ? st.data() : nullptr);
    }
  }
  flush_incoming();
  next_src_ = full.next_src_;
  known_ = full.known_;
  evicted_max_ = full.evicted_max_;
  step_seq_ = full.step_seq_;
  step_decode_ = full.step_decode_;
}

// --- maintenance ---

void CacheStore::gather(int seq, int layer, int kv_head, Candidates& out) const {
  out.clear();
  const HeadState& hs = head(layer, kv_head);
  const uint64_t bit = bit_of(seq);
  const int ns = config_.stats.n;
  for (int slot : {kMain, kIncoming}) {
    const Segment* seg = hs.segs[slot].get();
    if (!seg) continue;
    for (int32_t i = 0; i < seg->size(); ++i) {
      if (!(seg->meta.seqs[i] & bit)) continue;
      out.refs.push_back({static_cast<int8_t>(slot), i});
      out.src.push_back(seg->meta.src[i]);
      out.pos.push_back(seg->meta.pos[i]);
      if (ns) out.stats.insert(out.stats.end(), seg->meta.stat(i), seg->meta.stat(i) + ns);
    }
  }
}

int32_t CacheStore::count_candidates(int seq, int layer, int kv_head) const {
  const HeadState& hs = head(layer, kv_head);
  const uint64_t bit = bit_of(seq);
  int32_t n = 0;
  for (int slot : {kMain, kIncoming})
    if (const Segment* seg = hs.segs[slot].get())
      for (uint64_t m : seg->meta.seqs) n += (m & bit) != 0;
  return n;
}

int32_t CacheStore::candidates_at_most(int layer, int kv_head) const {
  const HeadState& hs = head(layer, kv_head);
  int32_t n = 0;
  for (int slot : {kMain, kIncoming})
    if (const Segment* seg = hs.segs[slot].get()) n += seg->size();
  return n;
}

void CacheStore::note_evicted(int seq, int32_t pos) {
  evicted_max_[seq] = std::max(evicted_max_[seq], pos);
}

void CacheStore::fold_into_summary(HeadState& hs, const Segment& from, int32_t i, uint64_t seqs) {
  auto& sum = static_cast<RowSegment&>(*hs.segs[kSummary]);
  const int hd = shape().head_dim;
  const int wslot = sum.meta.n_stats - 1;  // the weight statistic
  from.decode_keys(i, 1, row_k_.data());
  from.decode_values(i, 1, row_v_.data());
  const int acc = config_.stats.acc;
  const float w =
      config_.merge_by_attention && acc >= 0 ? std::max(from.meta.stat(i)[acc], 1e-9f) : 1.0f;
  for (int32_t j = 0; j < sum.size(); ++j) {
    if (sum.meta.seqs[j] != seqs) continue;
    float* st = sum.meta.stat(j);
    const float W = st[wslot];
    float* k = sum.f32_key_row(j);
    float* v = sum.f32_value_row(j);
    for (int c = 0; c < hd; ++c) {
      k[c] = (W * k[c] + w * row_k_[c]) / (W + w);
      v[c] = (W * v[c] + w * row_v_[c]) / (W + w);
    }
    st[wslot] = W + w;
    sum.meta.set_pos(j, std::max(sum.meta.pos[j], from.meta.pos[i]));
    return;
  }
  static thread_local std::vector<float> st;
  st.assign(sum.meta.n_stats, 0.0f);
  st[wslot] = w;
  sum.append(row_k_.data(), row_v_.data(), from.meta.pos[i], -1, seqs, st.data());
}

void CacheStore::evict(int seq, int layer, int kv_head, std::span<const EntryRef> refs) {
  if (refs.empty()) return;
  HeadState& hs = head(layer, kv_head);
  const uint64_t bit = bit_of(seq);
  const int hidx = layer * shape().n_kv_heads + kv_head;
  for (int slot : {kMain, kIncoming})
    if (hs.segs[slot]) flags_[slot].assign(hs.segs[slot]->size(), 0);
  bool any[kSlots] = {};
  for (const EntryRef& r : refs) {
    Segment& seg = *hs.segs[r.seg];
    const uint64_t mask = seg.meta.seqs[r.idx];
    assert(mask & bit);
    note_evicted(seq, seg.meta.pos[r.idx]);
    if (mask != bit) {
      seg.meta.set_seqs(r.idx, mask & ~bit);  // other sequences still hold it
      continue;
    }
    if (cold_) {
      assert(r.seg == kMain && config_.layout == StoreConfig::Layout::Rows);
      const auto& rs = static_cast<const RowSegment&>(seg);
      cold_->put(hidx, rs.key_bytes(r.idx), rs.value_bytes(r.idx), seg.meta.pos[r.idx],
                 seg.meta.src[r.idx], mask);
    }
    if (hs.segs[kSummary]) fold_into_summary(hs, seg, r.idx, mask);
    flags_[r.seg][r.idx] = 1;
    any[r.seg] = true;
  }
  for (int slot : {kMain, kIncoming})
    if (any[slot]) hs.segs[slot]->remove(flags_[slot]);
  if (cold_ && config_.cold_capacity > 0 && cold_->head(hidx).entries() > config_.cold_capacity) {
    // Restored rows point into cold pages: copy them before pages are freed.
    static_cast<RowSegment&>(*hs.segs[kRestored]).materialize();
    cold_->drop_oldest(hidx, config_.cold_capacity);
  }
}

int32_t CacheStore::merge_values(int seq, int layer, int kv_head, std::span<const EntryRef> refs,
                                 std::span<const ValueMerge> merges) {
  HeadState& hs = head(layer, kv_head);
  const uint64_t bit = bit_of(seq);
  auto alone = [&](int32_t cand) {
    const EntryRef& r = refs[cand];
    return hs.segs[r.seg]->meta.seqs[r.idx] == bit;
  };
  int32_t applied = 0;
  for (size_t g = 0; g < merges.size();) {
    size_t end = g;
    bool ok = alone(merges[g].from);
    for (; end < merges.size() && merges[end].from == merges[g].from; ++end)
      ok = ok && alone(merges[end].to);
    if (ok) {
      const EntryRef& f = refs[merges[g].from];
      hs.segs[f.seg]->decode_values(f.idx, 1, row_v_.data());
      for (size_t m = g; m < end; ++m) {
        const EntryRef& t = refs[merges[m].to];
        // Main and incoming are row segments for every layout but KIVI,
        // which PolicyCache::create refuses for merging scorers.
        static_cast<RowSegment&>(*hs.segs[t.seg])
            .add_to_value(t.idx, row_v_.data(), merges[m].weight);
      }
      ++applied;
    }
    g = end;
  }
  return applied;
}

void CacheStore::demote(int layer, int kv_head, std::span<const EntryRef> refs) {
  if (refs.empty()) return;
  HeadState& hs = head(layer, kv_head);
  Segment& in = *hs.segs[kIncoming];
  Segment& main = *hs.segs[kMain];
  flags_[kIncoming].assign(in.size(), 0);
  const int hd = shape().head_dim;
  for (const EntryRef& r : refs) {
    assert(r.seg == kIncoming);
    main.append(in.f32_keys() + int64_t{r.idx} * hd, in.f32_values() + int64_t{r.idx} * hd,
                in.meta.pos[r.idx], in.meta.src[r.idx], in.meta.seqs[r.idx],
                config_.stats.n ? in.meta.stat(r.idx) : nullptr);
    flags_[kIncoming][r.idx] = 1;
  }
  in.remove(flags_[kIncoming]);
}

const Rotation& CacheStore::rotation_for(int layer, int64_t delta) {
  const bool local = is_local(layer);
  const std::vector<float>& f = local ? inv_freq_local_ : inv_freq_;
  const bool neox = rope_of(layer).neox;
  if (!rotation_.is(delta, f, neox)) rotation_.set(delta, f, neox);
  return rotation_;
}

int32_t CacheStore::zero_key_channels(int seq, int layer, int kv_head, std::span<const char> zero) {
  HeadState& hs = head(layer, kv_head);
  const uint64_t bit = bit_of(seq);
  int32_t changed = 0;
  for (int slot : {kMain, kIncoming}) {
    Segment* seg = hs.segs[slot].get();
    if (!seg || seg->size() == 0) continue;
    auto* rows = dynamic_cast<RowSegment*>(seg);
    if (!rows)
      throw UnsupportedOperation("key channels: " + seg->precision() +
                                 " keys are quantized per channel block and cannot be rewritten");
    for (int32_t i = 0; i < seg->size(); ++i)
      if (seg->meta.seqs[i] == bit) {
        rows->zero_key_channels(i, zero);
        ++changed;
      }
  }
  return changed;
}

void CacheStore::renumber_contiguous(int seq, int layer, int kv_head) {
  HeadState& hs = head(layer, kv_head);
  const uint64_t bit = bit_of(seq);
  struct Item {
    int32_t src;
    int8_t slot;
    int32_t idx;
  };
  static thread_local std::vector<Item> items;
  items.clear();
  for (int slot : {kMain, kIncoming}) {
    Segment* seg = hs.segs[slot].get();
    if (!seg) continue;
    for (int32_t i = 0; i < seg->size(); ++i) {
      const uint64_t m = seg->meta.seqs[i];
      if (!(m & bit)) continue;
      if (m != bit)
        throw UnsupportedOperation("contiguous positions: sequence " + std::to_string(seq) +
                                   " shares entries with other sequences");
      if (!seg->can_rotate(i))
        throw UnsupportedOperation("contiguous positions: " + seg->precision() +
                                   " keys cannot be re-rotated");
      items.push_back({seg->meta.src[i], static_cast<int8_t>(slot), i});
    }
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.src < b.src; });
  if (items.empty()) return;
  // Anchored at the newest entry, which keeps its position: the entries
  // before it close up behind it. Every layer then agrees on the positions of
  // the newest tokens, which a sliding-window layer (Gemma 3) holds without
  // evicting, so the next query's position is right in every layer; and a
  // window's entries, already contiguous, are not re-rotated at all (only
  // the sinks move). RoPE sees relative positions only: the same attention
  // as numbering from 0.
  const Item& last = items.back();
  const int32_t base =
      hs.segs[last.slot]->meta.pos[last.idx] - static_cast<int32_t>(items.size() - 1);
  for (size_t r = 0; r < items.size(); ++r) {
    Segment& seg = *hs.segs[items[r].slot];
    const int32_t pos = seg.meta.pos[items[r].idx];
    const int32_t target = base + static_cast<int32_t>(r);
    if (pos == target) continue;
    seg.rotate_key(items[r].idx, rotation_for(layer, int64_t{target} - pos));
    seg.meta.set_pos(items[r].idx, target);
  }
  evicted_max_[seq] = -1;
}

template <typename F>
void CacheStore::release_entries(uint64_t bit, int h0, int h1, std::initializer_list<int> slots,
                                 F selected) {
  for (int h = h0; h < h1; ++h) {
    HeadState& hs = heads_[h];
    for (int slot : slots) {
      Segment* seg = hs.segs[slot].get();
      if (!seg || seg->size() == 0) continue;
      auto& f = flags_[slot];
      f.assign(seg->size(), 0);
      bool any = false;
      for (int32_t i = 0; i < seg->size(); ++i) {
        const uint64_t m = seg->meta.seqs[i];
        if (!(m & bit) || !selected(seg->meta.pos[i])) continue;
        seg->meta.set_seqs(i, m & ~bit);
        if ((m & ~bit) == 0) f[i] = any = true;
      }
      if (any) seg->remove(f);
    }
    if (!cold_) continue;
    auto& pages = cold_->head(h).pages;
    bool materialized = false;
    for (int32_t pi = static_cast<int32_t>(pages.size()) - 1; pi >= 0; --pi) {
      ColdPage& p = pages[pi];
      std::vector<char> f(p.meta.size(), 0);
      bool any = false;
      for (int32_t i = 0; i < p.meta.size(); ++i) {
        const uint64_t m = p.meta.seqs[i];
        if (!(m & bit) || !selected(p.meta.pos[i])) continue;
        p.meta.set_seqs(i, m & ~bit);
        if ((m & ~bit) == 0) f[i] = any = true;
      }
      if (!any) continue;
      // Restored rows point into cold pages: copy them before pages change.
      if (!materialized) static_cast<RowSegment&>(*hs.segs[kRestored]).materialize();
      materialized = true;
      cold_->remove(h, pi, f);
    }
  }
}

void CacheStore::trim_window(int seq, int layer, int32_t cutoff) {
  const int h0 = layer * shape().n_kv_heads;
  release_entries(bit_of(seq), h0, h0 + shape().n_kv_heads, {kMain, kIncoming},
                  [cutoff](int32_t pos) { return pos <= cutoff; });
}

void CacheStore::restore(int seq, int layer, int kv_head, const float* q, int64_t n_queries,
                         int64_t q_stride, int group, int max_pages) {
  assert(cold_);
  const ColdHead& ch = cold_->head(layer * shape().n_kv_heads + kv_head);
  const uint64_t bit = bit_of(seq);
  const int hd = shape().head_dim;
  static thread_local std::vector<float> scores;
  scores.assign(ch.pages.size(), std::numeric_limits<float>::quiet_NaN());
  for (int32_t pi = 0; pi < static_cast<int32_t>(ch.pages.size()); ++pi) {
    const ColdPage& p = ch.pages[pi];
    if (!visible(p, bit)) continue;
    float b = -std::numeric_limits<float>::infinity();
    for (int64_t t = 0; t < n_queries; ++t)
      for (int g = 0; g < group; ++g)
        b = std::max(b, ColdTier::bound(p, q + t * q_stride + int64_t{g} * hd, hd));
    scores[pi] = b;
  }
  restore_pages(seq, layer, kv_head, scores, max_pages);
}

bool CacheStore::visible(const ColdPage& p, uint64_t bit) const {
  // One sequence known: every entry is its own (no scan per page and step).
  if (known_ == bit) return p.meta.size() > 0;
  for (uint64_t m : p.meta.seqs)
    if (m & bit) return true;
  return false;
}

void CacheStore::restore_pages(int seq, int layer, int kv_head, std::span<const float> scores,
                               int max_pages) {
  HeadState& hs = head(layer, kv_head);
  auto& restored = static_cast<RowSegment&>(*hs.segs[kRestored]);
  restored.clear();
  const ColdHead& ch = cold_->head(layer * shape().n_kv_heads + kv_head);
  const uint64_t bit = bit_of(seq);
  static thread_local std::vector<std::pair<float, int32_t>> ranked;
  ranked.clear();
  for (int32_t pi = 0; pi < static_cast<int32_t>(scores.size()); ++pi)
    if (!std::isnan(scores[pi])) ranked.emplace_back(scores[pi], pi);
  const size_t take = std::min<size_t>(ranked.size(), static_cast<size_t>(std::max(0, max_pages)));
  std::partial_sort(ranked.begin(), ranked.begin() + take, ranked.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::sort(ranked.begin(), ranked.begin() + take,
            [](auto& a, auto& b) { return a.second < b.second; });
  for (size_t r = 0; r < take; ++r) {
    const ColdPage& p = ch.pages[ranked[r].second];
    for (int32_t i = 0; i < p.meta.size(); ++i)
      if (p.meta.seqs[i] & bit)
        restored.append_ref(cold_->key_bytes(p, i), cold_->value_bytes(p, i), p.meta.pos[i],
                            p.meta.src[i], p.meta.seqs[i]);
  }
}

void CacheStore::observe_cold(int seq, int layer, int kv_head, const float* q, int group,
                              float alpha, float scale, float softcap) {
  assert(cold_ && cold_->n_stats() >= 2);
  const uint64_t bit = bit_of(seq);
  const int hd = shape().head_dim;
  const HeadState& hs = head(layer, kv_head);
  ColdHead& ch = cold_->head(layer * shape().n_kv_heads + kv_head);
  // Keys [entries][head_dim] of every entry `seq` holds, each once: the hot
  // segments but the restored pages (cold entries, counted in the cold
  // tier), then every cold entry, in that order; one product with the
  // group's queries gives the logits [entries][group].
  static thread_local std::vector<float> keys, logits;
  keys.clear();
  const auto grow = [&](size_t rows) {
    keys.resize(keys.size() + rows * hd);
    return keys.data() + keys.size() - rows * hd;
  };
  for (int slot : {kMain, kIncoming, kSummary}) {
    const Segment* seg = hs.segs[slot].get();
    if (!seg || seg->size() == 0) continue;
    const size_t at = keys.size();
    seg->decode_keys(0, seg->size(), grow(seg->size()));
    // Entries of other sequences out, in order.
    size_t w = at;
    for (int32_t i = 0; i < seg->size(); ++i)
      if (seg->meta.seqs[i] & bit) {
        if (w != at + size_t(i) * hd)
          std::copy_n(keys.data() + at + size_t(i) * hd, hd, keys.data() + w);
        w += hd;
      }
    keys.resize(w);
  }
  const size_t n_hot = keys.size() / hd;
  for (const ColdPage& p : ch.pages)
    for (int32_t i = 0; i < p.meta.size(); ++i)
      if (p.meta.seqs[i] & bit) cold_->codec().decode(cold_->key_bytes(p, i), grow(1));
  const size_t n = keys.size() / hd;
  if (n == n_hot) return;
  logits.resize(n * group);
  // The model's scores: its scale, then its soft-cap (as the attention
  // kernels score, model/ops/attention.h's AttentionShape).
  if (!(scale > 0.0f)) scale = 1.0f / std::sqrt(static_cast<float>(hd));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), group, hd, scale,
              keys.data(), hd, q, hd, 0.0f, logits.data(), group);
  if (softcap > 0.0f) {
    const float inv = 1.0f / softcap;
    for (float& x : logits) x = softcap * std::tanh(x * inv);
  }
  // Softmax per query head; an entry's attention is its mean over the group.
  static thread_local std::vector<float> mass;
  mass.assign(n, 0.0f);
  for (int g = 0; g < group; ++g) {
    float top = -std::numeric_limits<float>::infinity();
    for (size_t e = 0; e < n; ++e) top = std::max(top, logits[e * group + g]);
    double sum = 0.0;
    for (size_t e = 0; e < n; ++e) sum += std::exp(logits[e * group + g] - top);
    for (size_t e = 0; e < n; ++e)
      mass[e] += static_cast<float>(std::exp(logits[e * group + g] - top) / sum) / group;
  }
  // Each cold entry's running average: stat 0 the average, stat 1 its
  // weight (1 - (1 - alpha)^steps), so average / weight is the mean of what
  // was seen while fewer than 1 / alpha steps went by.
  size_t e = n_hot;
  for (ColdPage& p : ch.pages)
    for (int32_t i = 0; i < p.meta.size(); ++i)
      if (p.meta.seqs[i] & bit) {
        float* st = p.meta.stat(i);
        st[0] += alpha * (mass[e++] - st[0]);
        st[1] += alpha * (1.0f - st[1]);
      }
}

void CacheStore::importance_scores(int seq, int layer, int kv_head, float threshold,
                                   std::vector<float>& out) const {
  const ColdHead& ch = cold_->head(layer * shape().n_kv_heads + kv_head);
  const uint64_t bit = bit_of(seq);
  out.assign(ch.pages.size(), std::numeric_limits<float>::quiet_NaN());
  for (size_t pi = 0; pi < ch.pages.size(); ++pi) {
    const ColdPage& p = ch.pages[pi];
    for (int32_t i = 0; i < p.meta.size(); ++i) {
      const float* st = p.meta.stat(i);
      if (!(p.meta.seqs[i] & bit) || st[1] <= 0.0f) continue;
      const float importance = st[0] / st[1];
      if (importance >= threshold && !(importance <= out[pi])) out[pi] = importance;
    }
  }
}

void CacheStore::clear_restored() {
  if (!cold_) return;
  for (auto& hs : heads_) hs.segs[kRestored]->clear();
}

int32_t CacheStore::restored(int layer, int kv_head) const {
  const Segment* s = head(layer, kv_head).segs[kRestored].get();
  return s ? s->size() : 0;
}

// --- sequences ---

void CacheStore::check_seq(int seq, bool allow_all, const char* op) const {
  if (allow_all && seq == -1) return;
  if (seq < 0 || seq >= kMaxSeqs)
    throw SequenceError(std::string(op) + ": sequence id " + std::to_string(seq) +
                        " out of range [0, " + std::to_string(kMaxSeqs) + ")" +
                        (allow_all ? " (or -1 for every sequence)" : ""));
}

void CacheStore::check_known(int seq, const char* op) const {
  if (!(known_ & bit_of(seq)))
    throw SequenceError(std::string(op) + ": unknown sequence " + std::to_string(seq));
}

void CacheStore::check_range(int64_t p0, int64_t p1, const char* op, int32_t& lo, int32_t& hi) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  for (int64_t p : {p0, p1}) {
    if (p < -1)
      throw SequenceError(std::string(op) + ": position " + std::to_string(p) +
                          " is negative (only -1, an open end, is allowed)");
    if (p > kMax)
      throw SequenceError(std::string(op) + ": position " + std::to_string(p) + " is beyond int32");
  }
  lo = p0 < 0 ? 0 : static_cast<int32_t>(p0);
  hi = p1 < 0 ? std::numeric_limits<int32_t>::max() : static_cast<int32_t>(p1);
  if (p1 >= 0 && lo > hi)
    throw SequenceError(std::string(op) + ": reversed range [" + std::to_string(p0) + ", " +
                        std::to_string(p1) + ")");
}

namespace {
// [lo, hi) with hi = INT32_MAX standing for an open end (INT32_MAX itself included).
bool in_range(int32_t pos, int32_t lo, int32_t hi) {
  return pos >= lo && (pos < hi || hi == std::numeric_limits<int32_t>::max());
}
}  // namespace

void CacheStore::clear() {
  assert(!in_step_);
  for (auto& hs : heads_)
    for (auto& s : hs.segs)
      if (s) s->clear();
  if (cold_) cold_->clear();
  positions_.clear();  // nothing held (the cold tier drops its pages whole)
  known_ = 0;
  evicted_max_.fill(-1);
}

void CacheStore::seq_rm(int seq, int64_t p0, int64_t p1) {
  check_seq(seq, true, "seq_rm");
  if (seq >= 0) check_known(seq, "seq_rm");
  int32_t lo, hi;
  check_range(p0, p1, "seq_rm", lo, hi);
  clear_restored();
  const uint64_t bit = seq < 0 ? ~uint64_t{0} : bit_of(seq);
  release_entries(bit, 0, n_heads(), {kMain, kIncoming, kSummary},
                  [lo, hi](int32_t pos) { return in_range(pos, lo, hi); });
  for (int s = 0; s < kMaxSeqs; ++s)
    if ((bit & bit_of(s)) && evicted_max_[s] >= 0 && in_range(evicted_max_[s], lo, hi))
      evicted_max_[s] = -1;
}

void CacheStore::seq_cp(int src, int dst, int64_t p0, int64_t p1) {
  check_seq(src, false, "seq_cp");
  check_seq(dst, false, "seq_cp");
  check_known(src, "seq_cp");
  int32_t lo, hi;
  check_range(p0, p1, "seq_cp", lo, hi);
  if (src == dst) return;
  clear_restored();
  const uint64_t sb = bit_of(src), db = bit_of(dst);
  for (auto& hs : heads_)
    for (int slot : {kMain, kIncoming, kSummary}) {
      Segment* seg = hs.segs[slot].get();
      if (!seg) continue;
      for (int32_t i = 0; i < seg->size(); ++i)
        if ((seg->meta.seqs[i] & sb) && in_range(seg->meta.pos[i], lo, hi))
          seg->meta.set_seqs(i, seg->meta.seqs[i] | db);
    }
  if (cold_)
    for (int h = 0; h < n_heads(); ++h)
      for (auto& p : cold_->head(h).pages)
        for (int32_t i = 0; i < p.meta.size(); ++i)
          if ((p.meta.seqs[i] & sb) && in_range(p.meta.pos[i], lo, hi))
            p.meta.set_seqs(i, p.meta.seqs[i] | db);
  known_ |= db;
  if (evicted_max_[src] >= 0 && in_range(evicted_max_[src], lo, hi))
    evicted_max_[dst] = std::max(evicted_max_[dst], evicted_max_[src]);
}

void CacheStore::seq_keep(int seq) {
  check_seq(seq, false, "seq_keep");
  check_known(seq, "seq_keep");
  const uint64_t bit = bit_of(seq);
  clear_restored();
  for (auto& hs : heads_)
    for (int slot : {kMain, kIncoming, kSummary}) {
      Segment* seg = hs.segs[slot].get();
      if (!seg) continue;
      auto& f = flags_[slot];
      f.assign(seg->size(), 0);
      bool any = false;
      for (int32_t i = 0; i < seg->size(); ++i) {
        seg->meta.set_seqs(i, seg->meta.seqs[i] & bit);
        if (!seg->meta.seqs[i]) f[i] = any = true;
      }
      if (any) seg->remove(f);
    }
  if (cold_)
    for (int h = 0; h < n_heads(); ++h) {
      auto& pages = cold_->head(h).pages;
      for (int32_t pi = static_cast<int32_t>(pages.size()) - 1; pi >= 0; --pi) {
        ColdPage& p = pages[pi];
        std::vector<char> f(p.meta.size(), 0);
        bool any = false;
        for (int32_t i = 0; i < p.meta.size(); ++i) {
          p.meta.set_seqs(i, p.meta.seqs[i] & bit);
          if (!p.meta.seqs[i]) f[i] = any = true;
        }
        if (any) cold_->remove(h, pi, f);
      }
    }
  for (int s = 0; s < kMaxSeqs; ++s)
    if (s != seq) evicted_max_[s] = -1;
}

template <typename F>
void CacheStore::shift_positions(int seq, int32_t lo, int32_t hi, F f, const char* op) {
  const uint64_t bit = bit_of(seq);
  auto check = [&](uint64_t m, int32_t pos, bool rotatable, const std::string& prec) {
    if (m != bit)
      throw UnsupportedOperation(std::string(op) + ": the entry at position " +
                                 std::to_string(pos) +
                                 " is shared with other sequences (remove or copy them first)");
    const int64_t np = f(pos);
    if (np > kMaxPosition)
      throw SequenceError(std::string(op) + ": position " + std::to_string(pos) +
                          " would move to " + std::to_string(np) +
                          ", beyond the largest position " + std::to_string(kMaxPosition));
    if (np >= 0 && np != pos && !rotatable)
      throw UnsupportedOperation(std::string(op) + ": " + prec +
                                 " keys cannot be re-rotated to a new position");
  };
  // Pass 1: check everything, so a failing operation changes nothing.
  for (auto& hs : heads_)
    for (int slot : {kMain, kIncoming, kSummary}) {
      const Segment* seg = hs.segs[slot].get();
      if (!seg) continue;
      for (int32_t i = 0; i < seg->size(); ++i)
        if ((seg->meta.seqs[i] & bit) && in_range(seg->meta.pos[i], lo, hi))
          check(seg->meta.seqs[i], seg->meta.pos[i], seg->can_rotate(i), seg->precision());
    }
  const bool cold_rotatable = cold_ && (cold_->codec().kind() == CodecKind::F32 ||
                                        cold_->codec().kind() == CodecKind::F16 ||
                                        cold_->codec().kind() == CodecKind::BF16);
  if (cold_)
    for (int h = 0; h < n_heads(); ++h)
      for (const auto& p : cold_->head(h).pages)
        for (int32_t i = 0; i < p.meta.size(); ++i)
          if ((p.meta.seqs[i] & bit) && in_range(p.meta.pos[i], lo, hi))
            check(p.meta.seqs[i], p.meta.pos[i], cold_rotatable,
                  std::string(codec_name(cold_->codec().kind())));
  // Pass 2: apply.
  clear_restored();
  const int n_kv = shape().n_kv_heads;
  for (size_t hx = 0; hx < heads_.size(); ++hx) {
    HeadState& hs = heads_[hx];
    const int layer = static_cast<int>(hx) / n_kv;
    for (int slot : {kMain, kIncoming, kSummary}) {
      Segment* seg = hs.segs[slot].get();
      if (!seg) continue;
      auto& fl = flags_[slot];
      fl.assign(seg->size(), 0);
      bool any = false;
      for (int32_t i = 0; i < seg->size(); ++i) {
        const int32_t pos = seg->meta.pos[i];
        if (!(seg->meta.seqs[i] & bit) || !in_range(pos, lo, hi)) continue;
        const int64_t np = f(pos);
        if (np < 0) {
          fl[i] = any = true;
          continue;
        }
        if (np == pos) continue;
        seg->rotate_key(i, rotation_for(layer, np - pos));
        seg->meta.set_pos(i, static_cast<int32_t>(np));
      }
      if (any) seg->remove(fl);
    }
  }
  if (cold_) {
    const RowCodec& codec = cold_->codec();
    for (int h = 0; h < n_heads(); ++h) {
      auto& pages = cold_->head(h).pages;
      for (int32_t pi = static_cast<int32_t>(pages.size()) - 1; pi >= 0; --pi) {
        ColdPage& p = pages[pi];
        std::vector<char> fl(p.meta.size(), 0);
        bool any = false, moved = false;
        for (int32_t i = 0; i < p.meta.size(); ++i) {
          const int32_t pos = p.meta.pos[i];
          if (!(p.meta.seqs[i] & bit) || !in_range(pos, lo, hi)) continue;
          const int64_t np = f(pos);
          if (np < 0) {
            fl[i] = any = true;
            continue;
          }
          if (np == pos) continue;
          uint8_t* kb = cold_->key_bytes(p, i);
          codec.decode(kb, row_k_.data());
          rotation_for(h / n_kv, np - pos).apply(row_k_.data());
          codec.encode(row_k_.data(), kb);
          p.meta.set_pos(i, static_cast<int32_t>(np));
          moved = true;
        }
        if (any)
          cold_->remove(h, pi, fl);
        else if (moved)
          cold_->recompute_bounds(p);
      }
    }
  }
  int32_t& em = evicted_max_[seq];
  if (em >= 0 && in_range(em, lo, hi)) {
    const int64_t np = f(em);
    em = np < 0 ? -1 : static_cast<int32_t>(np);
  }
}

void CacheStore::seq_add(int seq, int64_t p0, int64_t p1, int64_t delta) {
  check_seq(seq, false, "seq_add");
  check_known(seq, "seq_add");
  int32_t lo, hi;
  check_range(p0, p1, "seq_add", lo, hi);
  // Compared without llabs: llabs(INT64_MIN) overflows.
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (delta < -kMax || delta > kMax)
    throw SequenceError("seq_add: shift " + std::to_string(delta) + " is beyond int32");
  if (delta == 0) return;
  shift_positions(
      seq, lo, hi, [delta](int32_t p) { return int64_t{p} + delta; }, "seq_add");
}

void CacheStore::seq_div(int seq, int64_t p0, int64_t p1, int64_t d) {
  check_seq(seq, false, "seq_div");
  check_known(seq, "seq_div");
  int32_t lo, hi;
  check_range(p0, p1, "seq_div", lo, hi);
  if (d < 1 || d > std::numeric_limits<int32_t>::max())
    throw SequenceError("seq_div: divisor " + std::to_string(d) + " must be in [1, 2^31)");
  if (d == 1) return;
  shift_positions(
      seq, lo, hi, [d](int32_t p) { return int64_t{p} / d; }, "seq_div");
}

std::pair<int32_t, int32_t> CacheStore::pos_range(int seq, const char* what) const {
  check_seq(seq, false, what);
  // As a scan from hi = -1 found them: entries at negative positions (a
  // contiguous renumbering of duplicate positions) raise no maximum, and
  // with no position >= 0 there is no minimum either.
  const int32_t hi = std::max(positions_.max(seq), -1);
  return {hi < 0 ? -1 : positions_.min(seq), hi};
}

int32_t CacheStore::pos_min(int seq) const { return pos_range(seq, "pos_min").first; }
int32_t CacheStore::pos_max(int seq) const { return pos_range(seq, "pos_max").second; }

int32_t CacheStore::next_position(int seq) const {
  // At most kMaxPosition + 1: every position a store holds or has evicted is
  // at most kMaxPosition (begin_step, shift_positions, load_state check it).
  return std::max(pos_max(seq), evicted_max_[seq]) + 1;
}

void CacheStore::compact() {
  for (auto& hs : heads_)
    for (auto& s : hs.segs)
      if (s) s->shrink();
  if (!cold_) return;
  // Restored rows point into cold pages, which move: copy them first.
  for (auto& hs : heads_) static_cast<RowSegment&>(*hs.segs[kRestored]).materialize();
  // Re-pack each head's cold entries into as few pages as they need.
  const int64_t rb = cold_->codec().row_bytes();
  for (int h = 0; h < n_heads(); ++h) {
    auto& pages = cold_->head(h).pages;
    const int32_t n = cold_->head(h).entries();
    if (static_cast<int32_t>(pages.size()) <= (n + cold_->page_size() - 1) / cold_->page_size())
      continue;
    std::vector<uint8_t> k(n * rb), v(n * rb);
    EntryMeta meta;
    meta.n_stats = cold_->n_stats();
    int32_t at = 0;
    for (const auto& p : pages)
      for (int32_t i = 0; i < p.meta.size(); ++i, ++at) {
        std::memcpy(k.data() + at * rb, cold_->key_bytes(p, i), rb);
        std::memcpy(v.data() + at * rb, cold_->value_bytes(p, i), rb);
        meta.push_from(p.meta, i);
      }
    for (int32_t pi = static_cast<int32_t>(pages.size()) - 1; pi >= 0; --pi)
      cold_->remove(h, pi, std::vector<char>(pages[pi].meta.size(), 1));
    for (int32_t i = 0; i < n; ++i)
      cold_->put(h, k.data() + i * rb, v.data() + i * rb, meta.pos[i], meta.src[i], meta.seqs[i],
                 meta.n_stats > 0 ? meta.stat(i) : nullptr);
  }
}

// --- queries ---

MemoryReport CacheStore::memory() const {
  MemoryReport r;
  r.hot_layers.assign(shape().n_layers, {});
  r.cold_layers.assign(shape().n_layers, {});
  for (int l = 0; l < shape().n_layers; ++l) {
    MemoryTally t(r, l, false);
    for (int h = 0; h < shape().n_kv_heads; ++h)
      for (const auto& s : head(l, h).segs)
        if (s && s->size() > 0) s->tally(t);
  }
  if (cold_) cold_->tally(r, shape().n_kv_heads);
  return r;
}

namespace {
bool in_segments(const std::array<ClonePtr<Segment>, kSlots>& segs,
                 std::initializer_list<int> slots, int32_t src) {
  for (int slot : slots) {
    const Segment* seg = segs[slot].get();
    if (seg && std::find(seg->meta.src.begin(), seg->meta.src.end(), src) != seg->meta.src.end())
      return true;
  }
  return false;
}
}  // namespace

bool CacheStore::attends(int layer, int kv_head, int64_t source_index) const {
  if (layer < 0 || layer >= shape().n_layers || kv_head < 0 || kv_head >= shape().n_kv_heads)
    throw InputError("attends: layer " + std::to_string(layer) + " / KV head " +
                     std::to_string(kv_head) + " out of range");
  if (source_index < 0 || source_index > std::numeric_limits<int32_t>::max()) return false;
  return in_segments(head(layer, kv_head).segs, {kMain, kIncoming, kRestored},
                     static_cast<int32_t>(source_index));
}

bool CacheStore::holds(int layer, int kv_head, int64_t source_index) const {
  if (layer < 0 || layer >= shape().n_layers || kv_head < 0 || kv_head >= shape().n_kv_heads)
    throw InputError("holds: layer " + std::to_string(layer) + " / KV head " +
                     std::to_string(kv_head) + " out of range");
  if (source_index < 0 || source_index > std::numeric_limits<int32_t>::max()) return false;
  const int32_t src = static_cast<int32_t>(source_index);
  if (in_segments(head(layer, kv_head).segs, {kMain, kIncoming}, src)) return true;
  if (cold_)
    for (const auto& p : cold_->head(layer * shape().n_kv_heads + kv_head).pages)
      if (std::find(p.meta.src.begin(), p.meta.src.end(), src) != p.meta.src.end()) return true;
  return false;
}

std::vector<EntryInfo> CacheStore::entries(int layer, int kv_head) const {
  std::vector<EntryInfo> out;
  const HeadState& hs = head(layer, kv_head);
  for (int slot : {kMain, kIncoming, kSummary}) {
    const Segment* seg = hs.segs[slot].get();
    if (!seg) continue;
    for (int32_t i = 0; i < seg->size(); ++i)
      out.push_back(
          {seg->meta.pos[i], seg->meta.src[i], seg->meta.seqs[i], false, seg->precision()});
  }
  if (cold_)
    for (const auto& p : cold_->head(layer * shape().n_kv_heads + kv_head).pages)
      for (int32_t i = 0; i < p.meta.size(); ++i)
        out.push_back({p.meta.pos[i], p.meta.src[i], p.meta.seqs[i], true,
                       std::string(codec_name(cold_->codec().kind()))});
  return out;
}

bool CacheStore::find(int layer, int kv_head, int32_t src, float* k, float* v) const {
  const HeadState& hs = head(layer, kv_head);
  for (int slot : {kMain, kIncoming}) {
    const Segment* seg = hs.segs[slot].get();
    if (!seg) continue;
    for (int32_t i = 0; i < seg->size(); ++i)
      if (seg->meta.src[i] == src) {
        seg->decode_keys(i, 1, k);
        seg->decode_values(i, 1, v);
        return true;
      }
  }
  if (cold_)
    for (const auto& p : cold_->head(layer * shape().n_kv_heads + kv_head).pages)
      for (int32_t i = 0; i < p.meta.size(); ++i)
        if (p.meta.src[i] == src) {
          cold_->codec().decode(cold_->key_bytes(p, i), k);
          cold_->codec().decode(cold_->value_bytes(p, i), v);
          return true;
        }
  return false;
}

int32_t CacheStore::hot_entries(int seq, int layer, int kv_head) const {
  const uint64_t bit = bit_of(seq);
  int32_t n = 0;
  for (const auto& s : head(layer, kv_head).segs)
    if (s)
      for (uint64_t m : s->meta.seqs) n += (m & bit) != 0;
  return n;
}

int64_t CacheStore::hot_total() const {
  int64_t n = 0;
  for (const auto& hs : heads_)
    for (const auto& s : hs.segs)
      if (s) n += s->size();
  return n;
}

}  // namespace kvbench
