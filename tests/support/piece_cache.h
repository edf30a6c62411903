// A KvCache of one layer whose KV heads show pieces of any storage (f32,
// f16, bf16, int8, int4, int2 rows in the codecs' own layout), rows
// addressed directly, through an index or through row pointers, built from
// PieceSpecs with random rows: the attention tests read it in place and
// through keys() / values() (in_place = false), and record what it observes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "model/ops/kv_cache.h"
#include "policies/codec.h"

namespace kvbench::test {

// Plain rows; some rows of an array (index); rows by pointer (pages);
// pointers chosen through an index (restored pages a second sequence sees
// some of).
enum class Addr { Plain, Index, Ptrs, IndexPtrs };

struct PieceSpec {
  CodecKind codec;
  int group;
  Addr addr;
  int n;
};

// One layer; each KV head's view is a list of pieces built from PieceSpecs.
class PieceCache final : public KvCache {
 public:
  PieceCache(int n_kv_heads, int n_q_heads, int head_dim) : heads_(n_kv_heads) {
    shape_ = {1, n_kv_heads, n_q_heads, head_dim};
  }

  // Fills head h with random rows for each piece; positions increase with gaps.
  void set_head(int h, const std::vector<PieceSpec>& specs, std::mt19937& rng, int32_t& at) {
    const int hd = shape_.head_dim;
    Head& head = heads_[h];
    head.view.owner = this;
    head.view.head = h;
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    int32_t offset = 0;
    for (const PieceSpec& s : specs) {
      Stored st;
      st.codec = RowCodec(s.codec, hd, std::min(s.group, hd));
      st.addr = s.addr;
      const int64_t rb = st.codec.row_bytes();
      // Index: rows live at odd slots of an array twice as long; pointers: rows
      // in reverse order; index into pointers: odd entries of a table of 2n
      // pointers, the table pointing at the slots in reverse order.
      const bool twice = s.addr == Addr::Index || s.addr == Addr::IndexPtrs;
      const int slots = twice ? 2 * s.n : s.n;
      st.k.assign(slots * rb, 0);
      st.v.assign(slots * rb, 0);
      std::vector<float> row(hd);
      for (int j = 0; j < s.n; ++j) {
        const int slot = s.addr == Addr::Index       ? 2 * j + 1
                         : s.addr == Addr::Ptrs      ? s.n - 1 - j
                         : s.addr == Addr::IndexPtrs ? slots - 1 - (2 * j + 1)
                                                     : j;
        st.index.push_back(s.addr == Addr::IndexPtrs ? 2 * j + 1 : slot);
        st.slot.push_back(slot);
        for (auto* b : {&st.k, &st.v}) {
          for (auto& x : row) x = u(rng);
          st.codec.encode(row.data(), b->data() + slot * rb);
        }
        head.view.pos.push_back(at);
        at += 1 + static_cast<int32_t>(rng() % 3);
      }
      if (s.addr == Addr::IndexPtrs) {
        for (int t = 0; t < slots; ++t) {
          st.kptr.push_back(st.k.data() + int64_t{slots - 1 - t} * rb);
          st.vptr.push_back(st.v.data() + int64_t{slots - 1 - t} * rb);
        }
      } else {
        for (int j = 0; j < s.n; ++j) {
          st.kptr.push_back(st.k.data() + st.index[j] * rb);
          st.vptr.push_back(st.v.data() + st.index[j] * rb);
        }
      }
      st.offset = offset;
      offset += s.n;
      head.stored.push_back(std::move(st));
    }
    head.view.pieces_.clear();
    for (const Stored& st : head.stored) {
      KvPiece p;
      p.offset = st.offset;
      p.count = static_cast<int32_t>(st.index.size());
      const KvElement e = kv_element(st.codec.kind());
      p.k = {e, st.k.data(), st.codec.row_bytes(), st.codec.group()};
      p.v = {e, st.v.data(), st.codec.row_bytes(), st.codec.group()};
      if (st.addr == Addr::Index || st.addr == Addr::IndexPtrs)
        p.k.index = p.v.index = st.index.data();
      if (st.addr == Addr::Ptrs || st.addr == Addr::IndexPtrs) {
        p.k.ptrs = st.kptr.data();
        p.v.ptrs = st.vptr.data();
      }
      head.view.pieces_.push_back(p);
    }
  }

  const KvShape& shape() const override { return shape_; }
  void begin_step(const StepInfo&) override {}
  void append(int, const float*, const float*) override {}
  const KvHeadView& view(int, int kv_head) override { return heads_[kv_head].view; }
  AttentionRequest attention_request(int) const override { return request; }
  void observe(const AttentionRows& r) override {
    std::vector<float>& rows = observed[{r.kv_head, r.query_index}];
    rows.assign(r.probs, r.probs + int64_t{r.group} * r.head_stride);
  }
  void end_step() override {}

  AttentionRequest request;
  bool in_place = true;
  std::map<std::pair<int, int32_t>, std::vector<float>> observed;

 private:
  struct Stored {
    RowCodec codec;
    Addr addr = Addr::Plain;
    std::vector<uint8_t> k, v;
    std::vector<int32_t> index;
    std::vector<int32_t> slot;  // where row j is stored (what decode() reads)
    std::vector<const uint8_t*> kptr, vptr;
    int32_t offset = 0;
  };
  struct View final : public KvHeadView {
    int32_t size() const override { return static_cast<int32_t>(pos.size()); }
    const int32_t* positions() const override { return pos.data(); }
    const float* keys(int32_t b, int32_t c, float* out) const override {
      return decode(true, b, c, out);
    }
    const float* values(int32_t b, int32_t c, float* out) const override {
      return decode(false, b, c, out);
    }
    std::span<const KvPiece> pieces() const override {
      if (!owner->in_place) return {};
      return pieces_;
    }
    const float* decode(bool keys, int32_t begin, int32_t count, float* out) const {
      const int hd = owner->shape_.head_dim;
      for (int32_t j = begin; j < begin + count; ++j)
        for (const Stored& st : owner->heads_[head].stored) {
          const int32_t local = j - st.offset;
          if (local < 0 || local >= static_cast<int32_t>(st.index.size())) continue;
          const auto& b = keys ? st.k : st.v;
          st.codec.decode(b.data() + st.slot[local] * st.codec.row_bytes(),
                          out + int64_t{j - begin} * hd);
        }
      return out;
    }
    const PieceCache* owner = nullptr;
    int head = 0;
    std::vector<int32_t> pos;
    std::vector<KvPiece> pieces_;
  };
  struct Head {
    View view;
    std::vector<Stored> stored;
  };
  KvShape shape_;
  std::vector<Head> heads_;
};

}  // namespace kvbench::test
