#include "policies/segment.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

namespace kvbench {

// --- EntryMeta ---

void EntryMeta::push(int32_t p, int32_t s, uint64_t q, const float* st) {
  pos.push_back(p);
  src.push_back(s);
  seqs.push_back(q);
  if (n_stats > 0) {
    if (st)
      stats.insert(stats.end(), st, st + n_stats);
    else
      stats.resize(stats.size() + n_stats, 0.0f);
  }
  if (index) index->add(q, p);
}

void EntryMeta::push_from(const EntryMeta& o, int32_t i) {
  // Statistics carry over only between segments of the same layout.
  push(o.pos[i], o.src[i], o.seqs[i], o.n_stats == n_stats && n_stats > 0 ? o.stat(i) : nullptr);
}

void EntryMeta::copy_entry(int32_t to, int32_t from) {
  if (index) {
    index->remove(seqs[to], pos[to]);
    index->add(seqs[from], pos[from]);
  }
  pos[to] = pos[from];
  src[to] = src[from];
  seqs[to] = seqs[from];
  if (n_stats > 0) std::memcpy(stat(to), stat(from), sizeof(float) * n_stats);
}

void EntryMeta::pop_back() {
  if (index) index->remove(seqs.back(), pos.back());
  pos.pop_back();
  src.pop_back();
  seqs.pop_back();
  if (n_stats > 0) stats.resize(stats.size() - n_stats);
}

void EntryMeta::set_pos(int32_t i, int32_t p) {
  if (index) {
    index->remove(seqs[i], pos[i]);
    index->add(seqs[i], p);
  }
  pos[i] = p;
}

void EntryMeta::set_seqs(int32_t i, uint64_t q) {
  if (index) {
    index->remove(seqs[i] & ~q, pos[i]);  // the sequences that leave
    index->add(q & ~seqs[i], pos[i]);     // and those that join
  }
  seqs[i] = q;
}

void EntryMeta::compact(const std::vector<char>& keep) {
  int32_t w = 0;
  for (int32_t i = 0; i < size(); ++i) {
    if (!keep[i]) {
      if (index) index->remove(seqs[i], pos[i]);
      continue;
    }
    if (w != i) {
      pos[w] = pos[i];
      src[w] = src[i];
      seqs[w] = seqs[i];
      if (n_stats > 0) std::memcpy(stat(w), stat(i), sizeof(float) * n_stats);
    }
    ++w;
  }
  pos.resize(w);
  src.resize(w);
  seqs.resize(w);
  stats.resize(static_cast<size_t>(w) * n_stats);
}

void EntryMeta::clear() {
  if (index)
    for (int32_t i = 0; i < size(); ++i) index->remove(seqs[i], pos[i]);
  pos.clear();
  src.clear();
  seqs.clear();
  stats.clear();
}

void EntryMeta::count_into(PositionIndex& idx) const {
  for (int32_t i = 0; i < size(); ++i) idx.add(seqs[i], pos[i]);
}

void EntryMeta::shrink() {
  pos.shrink_to_fit();
  src.shrink_to_fit();
  seqs.shrink_to_fit();
  stats.shrink_to_fit();
}

// --- Rotation ---

void Rotation::set(int64_t d, const std::vector<float>& f, bool nx) {
  const std::vector<float>& inv_freq = f;
  this->inv_freq = &f;
  neox = nx;
  delta = d;
  cos.resize(inv_freq.size());
  sin.resize(inv_freq.size());
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const float angle = static_cast<float>(d) * inv_freq[i];
    cos[i] = std::cos(angle);
    sin[i] = std::sin(angle);
  }
}

void Rotation::apply(float* x) const {
  const size_t half = cos.size();
  if (neox) {
    for (size_t i = 0; i < half; ++i) {
      const float a = x[i], b = x[i + half];
      x[i] = a * cos[i] - b * sin[i];
      x[i + half] = a * sin[i] + b * cos[i];
    }
    return;
  }
  for (size_t i = 0; i < half; ++i) {
    const float a = x[2 * i], b = x[2 * i + 1];
    x[2 * i] = a * cos[i] - b * sin[i];
    x[2 * i + 1] = a * sin[i] + b * cos[i];
  }
}

// --- RowSegment ---

std::unique_ptr<Segment> RowSegment::clone() const {
  auto c = std::make_unique<RowSegment>(*this);
  c->materialize();
  return c;
}

void RowSegment::append_ref(const uint8_t* k, const uint8_t* v, int32_t pos, int32_t src,
                            uint64_t seqs) {
  if (!k_.empty()) {  // never mixed: a segment with rows of its own copies
    append_encoded(k, v, pos, src, seqs, nullptr);
    return;
  }
  kref_.push_back(k);
  vref_.push_back(v);
  meta.push(pos, src, seqs, nullptr);
}

void RowSegment::materialize() {
  if (kref_.empty()) return;
  const int64_t rb = codec_.row_bytes();
  k_.resize(kref_.size() * rb);
  v_.resize(vref_.size() * rb);
  for (size_t i = 0; i < kref_.size(); ++i) {
    std::memcpy(k_.data() + i * rb, kref_[i], rb);
    std::memcpy(v_.data() + i * rb, vref_[i], rb);
  }
  kref_.clear();
  vref_.clear();
}

void RowSegment::append(const float* k, const float* v, int32_t pos, int32_t src, uint64_t seqs,
                        const float* stats) {
  materialize();
  const int64_t rb = codec_.row_bytes();
  const size_t at = k_.size();
  k_.resize(at + rb);
  v_.resize(at + rb);
  codec_.encode(k, k_.data() + at);
  codec_.encode(v, v_.data() + at);
  meta.push(pos, src, seqs, stats);
}

void RowSegment::append_encoded(const uint8_t* k, const uint8_t* v, int32_t pos, int32_t src,
                                uint64_t seqs, const float* stats) {
  materialize();
  const int64_t rb = codec_.row_bytes();
  k_.insert(k_.end(), k, k + rb);
  v_.insert(v_.end(), v, v + rb);
  meta.push(pos, src, seqs, stats);
}

void RowSegment::remove(const std::vector<char>& remove) {
  const int64_t rb = codec_.row_bytes();
  const bool refs = !kref_.empty();  // references move like rows of its own
  for (int32_t i = size() - 1; i >= 0; --i) {
    if (!remove[i]) continue;
    const int32_t last = size() - 1;
    if (i != last) {
      if (refs) {
        kref_[i] = kref_[last];
        vref_[i] = vref_[last];
      } else {
        std::memcpy(k_.data() + i * rb, k_.data() + last * rb, rb);
        std::memcpy(v_.data() + i * rb, v_.data() + last * rb, rb);
      }
      meta.copy_entry(i, last);
    }
    if (refs) {
      kref_.pop_back();
      vref_.pop_back();
    } else {
      k_.resize(k_.size() - rb);
      v_.resize(v_.size() - rb);
    }
    meta.pop_back();
  }
}

void RowSegment::clear() {
  k_.clear();
  v_.clear();
  kref_.clear();
  vref_.clear();
  meta.clear();
}

void RowSegment::shrink() {
  kref_.shrink_to_fit();
  vref_.shrink_to_fit();
  k_.shrink_to_fit();
  v_.shrink_to_fit();
  meta.shrink();
}

void RowSegment::decode_keys(int32_t begin, int32_t count, float* out) const {
  for (int32_t i = 0; i < count; ++i) codec_.decode(key_bytes(begin + i), out + int64_t{i} * dim_);
}

void RowSegment::decode_values(int32_t begin, int32_t count, float* out) const {
  for (int32_t i = 0; i < count; ++i)
    codec_.decode(value_bytes(begin + i), out + int64_t{i} * dim_);
}

const float* RowSegment::f32_keys() const {
  return codec_.kind() == CodecKind::F32 && kref_.empty()
             ? reinterpret_cast<const float*>(k_.data())
             : nullptr;
}

const float* RowSegment::f32_values() const {
  return codec_.kind() == CodecKind::F32 && vref_.empty()
             ? reinterpret_cast<const float*>(v_.data())
             : nullptr;
}

int RowSegment::pieces_in_place(KvPiece* out) const {
  const KvElement e = kv_element(codec_.kind());
  const int64_t rb = codec_.row_bytes();
  KvPiece& p = out[0];
  p.offset = 0;
  p.count = size();
  p.k = {e, k_.data(), rb, codec_.group()};
  p.v = {e, v_.data(), rb, codec_.group()};
  if (!kref_.empty()) {
    p.k.ptrs = kref_.data();
    p.v.ptrs = vref_.data();
  }
  return 1;
}

bool RowSegment::codec_rotatable() const {
  return codec_.kind() == CodecKind::F32 || codec_.kind() == CodecKind::F16 ||
         codec_.kind() == CodecKind::BF16;
}

void RowSegment::rotate_key(int32_t i, const Rotation& r) {
  assert(codec_rotatable());
  materialize();
  uint8_t* row = k_.data() + i * codec_.row_bytes();
  if (codec_.kind() == CodecKind::F32) {
    r.apply(reinterpret_cast<float*>(row));
    return;
  }
  static thread_local std::vector<float> tmp;
  tmp.resize(dim_);
  codec_.decode(row, tmp.data());
  r.apply(tmp.data());
  codec_.encode(tmp.data(), row);
}

void RowSegment::zero_key_channels(int32_t i, std::span<const char> zero) {
  materialize();
  uint8_t* row = k_.data() + i * codec_.row_bytes();
  if (codec_.kind() == CodecKind::F32) {
    float* x = reinterpret_cast<float*>(row);
    for (int c = 0; c < dim_; ++c)
      if (zero[c]) x[c] = 0.0f;
    return;
  }
  static thread_local std::vector<float> tmp;
  tmp.resize(dim_);
  codec_.decode(row, tmp.data());
  for (int c = 0; c < dim_; ++c)
    if (zero[c]) tmp[c] = 0.0f;
  codec_.encode(tmp.data(), row);
}

void RowSegment::add_to_value(int32_t i, const float* v, float w) {
  materialize();
  uint8_t* row = v_.data() + i * codec_.row_bytes();
  if (codec_.kind() == CodecKind::F32) {
    float* x = reinterpret_cast<float*>(row);
    for (int c = 0; c < dim_; ++c) x[c] += w * v[c];
    return;
  }
  static thread_local std::vector<float> tmp;
  tmp.resize(dim_);
  codec_.decode(row, tmp.data());
  for (int c = 0; c < dim_; ++c) tmp[c] += w * v[c];
  codec_.encode(tmp.data(), row);
}

void RowSegment::tally(MemoryTally& t) const {
  MemoryBytes b;
  const uint64_t n = static_cast<uint64_t>(size());
  b.kv = 2 * n * codec_.data_bytes();
  b.scales = 2 * n * codec_.param_bytes();
  b.meta = meta.bytes();
  b.entries = n;
  t.add(precision(), b);
}

// --- KiviSegment ---

KiviSegment::KiviSegment(int dim, int group, int residual, int n_stats, KiviKeys keys,
                         KiviValues values)
    : Segment(dim, n_stats),
      group_(group),
      residual_(residual),
      keys_(keys),
      values_(values),
      vcodec_(CodecKind::Int2, dim, std::min(group, dim)),
      kcodec_(CodecKind::Int2, dim, std::min(group, dim)) {
  assert(residual % group == 0 && dim % 4 == 0);
}

void KiviSegment::append(const float* k, const float* v, int32_t pos, int32_t src, uint64_t seqs,
                         const float* stats) {
  kfull_.insert(kfull_.end(), k, k + dim_);
  vfull_.insert(vfull_.end(), v, v + dim_);
  meta.push(pos, src, seqs, stats);
}

// Quantizes rows [q, max(q, n - residual)) of `full` per token with `codec`
// into `codes` and drops them from `full`; returns the new q.
static int32_t quantize_rows_beyond_residual(const RowCodec& codec, int32_t n, int32_t residual,
                                             int dim, int32_t q, std::vector<float>& full,
                                             std::vector<uint8_t>& codes) {
  const int32_t target = std::max(q, n - residual);
  if (target == q) return q;
  const int64_t rb = codec.row_bytes();
  const size_t at = codes.size();
  codes.resize(at + (target - q) * rb);
  for (int32_t i = 0; i < target - q; ++i)
    codec.encode(full.data() + int64_t{i} * dim, codes.data() + at + i * rb);
  full.erase(full.begin(), full.begin() + int64_t{target - q} * dim);
  return target;
}

void KiviSegment::flush() {
  const int32_t n = size();
  const int64_t code_row = dim_ / 4;
  if (keys_ == KiviKeys::Token) {
    kq_ = quantize_rows_beyond_residual(kcodec_, n, residual_, dim_, kq_, kfull_, kcodes_);
  }
  while (keys_ == KiviKeys::Channel && n - kq_ >= residual_) {
    kparams_stale_ = true;
    for (int b = 0; b < residual_ / group_; ++b) {
      int32_t id;
      if (!free_blocks_.empty()) {
        id = free_blocks_.back();
        free_blocks_.pop_back();
      } else {
        id = static_cast<int32_t>(blocks_.size());
        blocks_.emplace_back();
      }
      Block& blk = blocks_[id];
      blk.params.resize(2 * static_cast<size_t>(dim_));
      blk.count = group_;
      ++live_blocks_;
      const size_t at = kcodes_.size();
      kcodes_.resize(at + group_ * code_row);
      kivi_encode_key_block(kfull_.data() + int64_t{b} * group_ * dim_, group_, dim_,
                            blk.params.data(), kcodes_.data() + at);
      kblock_.insert(kblock_.end(), group_, id);
    }
    kfull_.erase(kfull_.begin(), kfull_.begin() + int64_t{residual_} * dim_);
    kq_ += residual_;
  }
  if (values_ == KiviValues::Token)
    vq_ = quantize_rows_beyond_residual(vcodec_, n, residual_, dim_, vq_, vfull_, vcodes_);
}

void KiviSegment::remove(const std::vector<char>& remove) {
  kparams_stale_ = true;
  const int32_t n = size();
  const int64_t code_row = key_code_row();
  const bool blocks = keys_ == KiviKeys::Channel;
  const int64_t vrb = vcodec_.row_bytes();
  std::vector<char>& keep = keep_;
  keep.assign(n, 0);
  int32_t wk = 0, wkf = 0, wv = 0, wvf = 0, new_kq = 0, new_vq = 0;
  // Entry i's f32 row (row i - quantized of `full`), kept: moved down to row w.
  const auto keep_full_row = [&](std::vector<float>& full, int32_t i, int32_t quantized,
                                 int32_t& w) {
    const int64_t from = int64_t{i - quantized} * dim_;
    if (w * int64_t{dim_} != from)
      std::memmove(full.data() + int64_t{w} * dim_, full.data() + from, sizeof(float) * dim_);
    ++w;
  };
  for (int32_t i = 0; i < n; ++i) {
    keep[i] = !remove[i];
    if (i < kq_) {
      if (remove[i]) {
        if (blocks && --blocks_[kblock_[i]].count == 0) {
          Block& blk = blocks_[kblock_[i]];
          blk.params.clear();
          blk.params.shrink_to_fit();
          free_blocks_.push_back(kblock_[i]);
          --live_blocks_;
        }
      } else {
        if (wk != i) {
          std::memmove(kcodes_.data() + wk * code_row, kcodes_.data() + i * code_row, code_row);
          if (blocks) kblock_[wk] = kblock_[i];
        }
        ++wk;
        ++new_kq;
      }
    } else if (!remove[i]) {
      keep_full_row(kfull_, i, kq_, wkf);
    }
    if (i < vq_) {
      if (!remove[i]) {
        if (wv != i) std::memmove(vcodes_.data() + wv * vrb, vcodes_.data() + i * vrb, vrb);
        ++wv;
        ++new_vq;
      }
    } else if (!remove[i]) {
      keep_full_row(vfull_, i, vq_, wvf);
    }
  }
  kcodes_.resize(wk * code_row);
  if (blocks) kblock_.resize(wk);
  kfull_.resize(int64_t{wkf} * dim_);
  vcodes_.resize(wv * vrb);
  vfull_.resize(int64_t{wvf} * dim_);
  kq_ = new_kq;
  vq_ = new_vq;
  meta.compact(keep);
}

void KiviSegment::clear() {
  kparams_stale_ = true;
  kq_ = vq_ = 0;
  kcodes_.clear();
  kblock_.clear();
  blocks_.clear();
  free_blocks_.clear();
  live_blocks_ = 0;
  kfull_.clear();
  vcodes_.clear();
  vfull_.clear();
  meta.clear();
}

void KiviSegment::shrink() {
  kcodes_.shrink_to_fit();
  kblock_.shrink_to_fit();
  kfull_.shrink_to_fit();
  vcodes_.shrink_to_fit();
  vfull_.shrink_to_fit();
  meta.shrink();
}

void KiviSegment::decode_keys(int32_t begin, int32_t count, float* out) const {
  const int64_t code_row = key_code_row();
  for (int32_t j = 0; j < count; ++j) {
    const int32_t i = begin + j;
    float* o = out + int64_t{j} * dim_;
    if (i < kq_ && keys_ == KiviKeys::Token)
      kcodec_.decode(kcodes_.data() + i * code_row, o);
    else if (i < kq_)
      kivi_decode_key(kcodes_.data() + i * code_row, blocks_[kblock_[i]].params.data(), dim_, o);
    else
      std::memcpy(o, kfull_.data() + int64_t{i - kq_} * dim_, sizeof(float) * dim_);
  }
}

void KiviSegment::decode_values(int32_t begin, int32_t count, float* out) const {
  const int64_t rb = vcodec_.row_bytes();
  for (int32_t j = 0; j < count; ++j) {
    const int32_t i = begin + j;
    float* o = out + int64_t{j} * dim_;
    if (i < vq_)
      vcodec_.decode(vcodes_.data() + i * rb, o);
    else
      std::memcpy(o, vfull_.data() + int64_t{i - vq_} * dim_, sizeof(float) * dim_);
  }
}

const float* KiviSegment::f32_keys() const { return kq_ == 0 ? kfull_.data() : nullptr; }
const float* KiviSegment::f32_values() const { return vq_ == 0 ? vfull_.data() : nullptr; }

int KiviSegment::pieces_in_place(KvPiece* out) const {
  const int32_t n = size();
  const int64_t code_row = key_code_row(), f32_row = int64_t{dim_} * 4;
  if (keys_ == KiviKeys::Channel &&
      (kparams_stale_ || static_cast<int32_t>(kparams_.size()) != kq_)) {
    kparams_.resize(kq_);
    for (int32_t i = 0; i < kq_; ++i) kparams_[i] = blocks_[kblock_[i]].params.data();
    kparams_stale_ = false;
  }
  // Cuts at kq and vq: within a piece each side is all quantized or all f32.
  const int32_t cuts[] = {0, std::min(kq_, vq_), std::max(kq_, vq_), n};
  int count = 0;
  for (int c = 0; c < 3; ++c) {
    const int32_t lo = cuts[c], hi = cuts[c + 1];
    if (lo >= hi) continue;
    KvPiece& p = out[count++];
    p.offset = lo;
    p.count = hi - lo;
    if (lo < kq_ && keys_ == KiviKeys::Token) {
      p.k = {KvElement::Q2, kcodes_.data() + lo * code_row, code_row, kcodec_.group()};
    } else if (lo < kq_) {
      p.k = {KvElement::K2, kcodes_.data() + lo * code_row, code_row, 0};
      p.k.params = kparams_.data() + lo;
    } else {
      p.k = {KvElement::F32, reinterpret_cast<const uint8_t*>(kfull_.data()) + (lo - kq_) * f32_row,
             f32_row, 0};
    }
    if (lo < vq_)
      p.v = {KvElement::Q2, vcodes_.data() + lo * vcodec_.row_bytes(), vcodec_.row_bytes(),
             vcodec_.group()};
    else
      p.v = {KvElement::F32, reinterpret_cast<const uint8_t*>(vfull_.data()) + (lo - vq_) * f32_row,
             f32_row, 0};
  }
  return count;
}

void KiviSegment::rotate_key(int32_t i, const Rotation& r) {
  assert(i >= kq_);
  r.apply(kfull_.data() + int64_t{i - kq_} * dim_);
}

int32_t KiviSegment::distinct_blocks() const {
  std::vector<int32_t> ids(kblock_.begin(), kblock_.end());
  std::sort(ids.begin(), ids.end());
  return static_cast<int32_t>(std::unique(ids.begin(), ids.end()) - ids.begin());
}

float KiviSegment::key_bound(int32_t i, int c) const {
  assert(keys_ == KiviKeys::Channel);
  if (i >= kq_) return 0.0f;
  return kivi_key_error_bound(blocks_[kblock_[i]].params.data(), dim_, c);
}

void KiviSegment::tally(MemoryTally& t) const {
  const uint64_t n = static_cast<uint64_t>(size());
  MemoryBytes q;
  const bool token_keys = keys_ == KiviKeys::Token;
  q.kv = static_cast<uint64_t>(kq_) * (token_keys ? kcodec_.data_bytes() : dim_ / 4) +
         static_cast<uint64_t>(vq_) * vcodec_.data_bytes();
  q.scales = (token_keys ? static_cast<uint64_t>(kq_) * kcodec_.param_bytes()
                         : static_cast<uint64_t>(live_blocks_) * KeyBlockParams::bytes(dim_)) +
             static_cast<uint64_t>(vq_) * vcodec_.param_bytes();
  q.meta = meta.bytes();
  q.entries = n;
  t.add("kivi2", q);
  MemoryBytes full;
  full.kv = (n - kq_ + n - vq_) * static_cast<uint64_t>(dim_) * 4;
  if (full.kv) t.add("f32", full);
}

}  // namespace kvbench
