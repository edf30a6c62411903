// Property tests of the cache policies: random sequences of steps (appends,
// attention observations, maintenance), end_prefill, sequence operations,
// clones and compaction, driven through the model's cache interface with
// tiny shapes and checked after every operation against a shadow model:
//   - every held entry is one the shadow holds, at the same position, with a
//     subset of its sequences, and its K/V within the storage's analytic
//     error bound (bit-identical for f32, offloaded or not);
//   - sequence operations give exactly the shadow's result, or a typed error
//     and no change at all;
//   - streaming policies never hold more than the budget after a step;
//     windows hold exactly the last W, sinks are always held;
//   - the accounted bytes equal the sum over the entries.
// More than 100,000 operations in total (the count is recorded).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "policies/cache_errors.h"
#include "policies/policy_cache.h"
#include "tests/support/random_projection.h"
#include "tests/support/registry_specs.h"

namespace kvbench {
namespace {

constexpr int kLayers = 2, kKvHeads = 2, kQHeads = 4, kDim = 8;

CacheContext tiny_context(int64_t context = 256) {
  CacheContext c;
  c.shape = {kLayers, kKvHeads, kQHeads, kDim};
  c.rope.n_dims = kDim;
  c.rope.freq_base = 10000.0f;
  c.context_tokens = context;
  c.seed = 7;
  c.output_projection = std::make_shared<test::RandomProjection>(c.shape, 5);
  return c;
}

constexpr uint64_t bit_of(int s) { return uint64_t{1} << s; }

std::string param_or(const ComponentSpec& c, std::string_view name) {
  return c.has(name) ? c.get(name) : "";
}

bool in_range(int32_t pos, int32_t lo, int32_t hi) {
  return pos >= lo && (pos < hi || hi == INT32_MAX);
}

struct ShadowEntry {
  int32_t pos = 0;
  uint64_t seqs = 0;
  std::vector<float> k, v;
  int rotations = 0;
};

// (layer * kKvHeads + head, stream index) -> entry
using Shadow = std::map<std::pair<int, int32_t>, ShadowEntry>;

int64_t g_operations = 0;

class Driver {
 public:
  Driver(const std::string& spec, uint64_t seed, int64_t context = 256)
      : spec_(parse_policy_spec(spec)), rng_(seed) {
    cache_ = PolicyCache::create(spec_, tiny_context(context));
    // Supplied importance (the oracle's hindsight, a reconstruction pass): any table will do.
    if (cache_->needs_hindsight() || cache_->needs_reconstruction()) {
      std::uniform_real_distribution<float> u(0.0f, 1.0f);
      for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kKvHeads; ++h) {
          std::vector<float> imp(4096);
          for (auto& x : imp) x = u(rng_);
          cache_->set_importance(l, h, imp);
        }
    }
    const std::string& st = spec_.storage.name;
    group_ = spec_.storage.has("group")
                 ? static_cast<int>(std::min<int64_t>(spec_.storage.get_int("group"), kDim))
                 : kDim;
    quantized_ = st == "int8" || st == "int4" || st == "kivi2" || st == "mixed";
    half_ = st == "f16" || st == "bf16";
  }

  PolicyCache& cache() { return *cache_; }
  const PolicySpec& spec() const { return spec_; }
  Shadow& shadow() { return shadow_; }
  std::mt19937_64& rng() { return rng_; }

  // One step of n tokens for `seq`, with random K/V, queries and attention.
  void step(int seq, int n, bool decode) {
    const int32_t first = cache_->next_position(seq);
    const int32_t src0 = static_cast<int32_t>(cache_->store().tokens_seen());
    std::vector<int32_t> pos(n), tokens(n, 0);
    for (int t = 0; t < n; ++t) pos[t] = first + t;
    StepInfo info;
    info.seq = seq;
    info.phase = decode ? StepPhase::Decode : StepPhase::Prefill;
    info.positions = pos;
    info.tokens = tokens;
    cache_->begin_step(info);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_real_distribution<float> u(0.01f, 1.0f);
    std::vector<float> k(n * kKvHeads * kDim), v(k.size()), q(n * kQHeads * kDim);
    for (int l = 0; l < kLayers; ++l) {
      for (auto& x : k) x = nd(rng_) * 2.0f;
      for (auto& x : v) x = nd(rng_);
      cache_->append(l, k.data(), v.data());
      for (int h = 0; h < kKvHeads; ++h)
        for (int t = 0; t < n; ++t) {
          ShadowEntry e;
          e.pos = pos[t];
          e.seqs = bit_of(seq);
          const float* kr = k.data() + (t * kKvHeads + h) * kDim;
          const float* vr = v.data() + (t * kKvHeads + h) * kDim;
          e.k.assign(kr, kr + kDim);
          e.v.assign(vr, vr + kDim);
          shadow_[{l * kKvHeads + h, src0 + t}] = std::move(e);
        }
      const AttentionRequest req = cache_->attention_request(l);
      if (req.queries) {
        for (auto& x : q) x = nd(rng_);
        cache_->observe_queries(l, q.data(), pos);
      }
      // All heads' views first (as attention does), then read them.
      std::vector<const KvHeadView*> views;
      for (int h = 0; h < kKvHeads; ++h) views.push_back(&cache_->view(l, h));
      for (int h = 0; h < kKvHeads; ++h) {
        const KvHeadView& view = *views[h];
        ASSERT_GE(view.size(), n) << "a step sees its own tokens";
        std::vector<float> ks(view.size() * kDim), vs(ks.size());
        const float* kk = view.keys(0, view.size(), ks.data());
        const float* vv = view.values(0, view.size(), vs.data());
        ASSERT_TRUE(std::isfinite(kk[0]) && std::isfinite(vv[view.size() * kDim - 1]));
        // The step's own rows are in the view: unchanged (a step attends at
        // full precision), except f16 / bf16, which are encoded on append.
        const float tol = half_ ? 0.02f : 0.0f;
        int found = 0;
        for (int32_t j = 0; j < view.size(); ++j)
          for (int t = 0; t < n; ++t) {
            if (view.positions()[j] != pos[t]) continue;
            const float* want = k.data() + (t * kKvHeads + h) * kDim;
            bool same = true;
            for (int c = 0; c < kDim; ++c)
              same =
                  same && std::fabs(kk[j * kDim + c] - want[c]) <= tol * (1 + std::fabs(want[c]));
            found += same;
          }
        ASSERT_GE(found, n);
      }
      if (req.wanted) {
        for (int h = 0; h < kKvHeads; ++h) {
          const KvHeadView& view = *views[h];
          const int32_t m = view.size();
          const int first_q = req.last_queries < 0 ? 0 : std::max(0, n - req.last_queries);
          std::vector<float> probs(2 * m);
          for (int t = first_q; t < n; ++t) {
            for (int g = 0; g < 2; ++g) {
              double sum = 0;
              for (int32_t j = 0; j < m; ++j) {
                const float p = view.positions()[j] <= pos[t] ? u(rng_) : 0.0f;
                probs[g * m + j] = p;
                sum += p;
              }
              for (int32_t j = 0; j < m; ++j) probs[g * m + j] /= static_cast<float>(sum);
            }
            AttentionRows rows;
            rows.layer = l;
            rows.kv_head = h;
            rows.query_index = t;
            rows.query_pos = pos[t];
            rows.group = kQHeads / kKvHeads;
            rows.n = m;
            rows.probs = probs.data();
            rows.head_stride = m;
            cache_->observe(rows);
          }
        }
      }
    }
    cache_->end_step();
    ++g_operations;
  }

  // Calls f(head index, src, pos, seqs, precision, cold, kivi segment or
  // null, index in it, k, v) for every held entry (restored copies excluded).
  template <typename F>
  void for_each_held(F f) const {
    std::vector<float> k(kDim), v(kDim);
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKvHeads; ++h) {
        const int hi = l * kKvHeads + h;
        for (int slot : {kMain, kIncoming, kSummary}) {
          const Segment* seg = cache_->store().segment(l, h, slot);
          if (!seg) continue;
          const auto* ks = dynamic_cast<const KiviSegment*>(seg);
          for (int32_t i = 0; i < seg->size(); ++i) {
            seg->decode_keys(i, 1, k.data());
            seg->decode_values(i, 1, v.data());
            f(hi, seg->meta.src[i], seg->meta.pos[i], seg->meta.seqs[i], seg->precision(), false,
              ks, i, k.data(), v.data());
          }
        }
        if (const ColdTier* ct = cache_->store().cold()) {
          const std::string prec(codec_name(ct->codec().kind()));
          for (const auto& p : ct->head(hi).pages)
            for (int32_t i = 0; i < p.meta.size(); ++i) {
              ct->codec().decode(ct->key_bytes(p, i), k.data());
              ct->codec().decode(ct->value_bytes(p, i), v.data());
              f(hi, p.meta.src[i], p.meta.pos[i], p.meta.seqs[i], prec, true, nullptr, i, k.data(),
                v.data());
            }
        }
      }
  }

  // Held entries must be shadow entries (same position, subset of its
  // sequences, K/V within bound); with `exact`, the same set exactly.
  void check(bool exact, bool allow_renumber = false) {
    SCOPED_TRACE(to_string(spec_));
    std::set<std::pair<int, int32_t>> seen;
    bool failed = false;
    for_each_held([&](int hi, int32_t src, int32_t pos, uint64_t seqs, const std::string& prec,
                      bool cold, const KiviSegment* ks, int32_t idx, const float* k,
                      const float* v) {
      if (failed || src < 0) return;  // src < 0: a merged summary entry
      failed = true;
      ASSERT_TRUE(seen.insert({hi, src}).second) << "entry held twice: src " << src;
      auto it = shadow_.find({hi, src});
      ASSERT_NE(it, shadow_.end()) << "held entry unknown to the shadow: src " << src;
      ShadowEntry& s = it->second;
      if (pos != s.pos) {
        ASSERT_TRUE(allow_renumber) << "src " << src << " at " << pos << ", shadow " << s.pos;
        Rotation r;
        r.set(int64_t{pos} - s.pos, rope_inv_freq(tiny_context().rope), false);
        r.apply(s.k.data());
        s.pos = pos;
        ++s.rotations;
      }
      ASSERT_EQ(seqs & ~s.seqs, 0u) << "held by a sequence the shadow does not have";
      ASSERT_NE(seqs, 0u);
      if (exact) ASSERT_EQ(seqs, s.seqs) << "src " << src;
      // CaM folds evicted values into kept ones (tests/test_policies_behaviour
      // checks those values); keys stay as written.
      // ThinK zeroes some of the prompt's key channels (tests/test_think
      // checks which): the shadow adopts a channel the cache zeroed, so a
      // later renumbering rotates the pruned key in both.
      if (cache_->zeroes_key_channels())
        for (int c = 0; c < kDim; ++c)
          if (k[c] == 0.0f) s.k[c] = 0.0f;
      check_values(src, prec, cold, ks, idx, s, k, cache_->merges_values() ? s.v.data() : v);
      failed = false;
    });
    ASSERT_FALSE(failed);
    if (exact) ASSERT_EQ(seen.size(), shadow_.size()) << "shadow entries missing from the cache";
    check_memory();
  }

  // After policy maintenance: the shadow forgets what the policy evicted.
  void prune() {
    std::map<std::pair<int, int32_t>, uint64_t> held;
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKvHeads; ++h)
        for (const EntryInfo& e : cache_->store().entries(l, h))
          if (e.src >= 0) held[{l * kKvHeads + h, e.src}] = e.seqs;
    for (auto it = shadow_.begin(); it != shadow_.end();) {
      auto f = held.find(it->first);
      if (f == held.end()) {
        it = shadow_.erase(it);
      } else {
        it->second.seqs = f->second;
        ++it;
      }
    }
  }

  // The accounted bytes equal the sum over the entries; layers and
  // precisions add up to the totals.
  void check_memory() {
    const MemoryReport r = cache_->memory();
    MemoryBytes hot, cold;
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKvHeads; ++h) {
        for (int slot = 0; slot < kSlots; ++slot) {
          const Segment* seg = cache_->store().segment(l, h, slot);
          if (!seg) continue;
          const uint64_t n = static_cast<uint64_t>(seg->size());
          hot.entries += n;
          hot.meta += n * (kEntryMetaBytes + 4 * seg->meta.n_stats);
          if (auto* rs = dynamic_cast<const RowSegment*>(seg)) {
            hot.kv += 2 * n * rs->codec().data_bytes();
            hot.scales += 2 * n * rs->codec().param_bytes();
          } else if (auto* ks = dynamic_cast<const KiviSegment*>(seg)) {
            const uint64_t kq = ks->quantized_keys(), vq = ks->quantized_values();
            const bool token_keys = ks->keys_mode() == KiviKeys::Token;
            hot.kv += kq * (token_keys ? ks->key_codec().data_bytes() : kDim / 4) +
                      vq * ks->value_codec().data_bytes() + (2 * n - kq - vq) * kDim * 4;
            ASSERT_EQ(ks->live_blocks(), ks->distinct_blocks());
            hot.scales += (token_keys ? kq * ks->key_codec().param_bytes()
                                      : static_cast<uint64_t>(ks->distinct_blocks()) * kDim * 4) +
                          vq * ks->value_codec().param_bytes();
          }
        }
        if (const ColdTier* ct = cache_->store().cold())
          for (const auto& p : ct->head(l * kKvHeads + h).pages) {
            const uint64_t n = static_cast<uint64_t>(p.meta.size());
            ASSERT_GT(n, 0u) << "empty cold page kept";
            ASSERT_LE(n, static_cast<uint64_t>(ct->page_size()));
            cold.entries += n;
            cold.kv += 2 * n * ct->codec().data_bytes();
            cold.scales += 2 * n * ct->codec().param_bytes();
            // Metadata, statistics (restore by importance's running averages), bounds.
            cold.meta += n * (kEntryMetaBytes + 4 * p.meta.n_stats) + 2 * 4 * kDim;
          }
      }
    ASSERT_EQ(r.hot, hot);
    ASSERT_EQ(r.cold, cold);
    MemoryBytes layers, precisions;
    for (const auto& b : r.hot_layers) layers += b;
    for (const auto& [name, b] : r.hot_precisions) precisions += b;
    ASSERT_EQ(layers.total(), hot.total());
    ASSERT_EQ(precisions.total(), hot.total());
  }

  // Random sequence operation with sometimes-invalid arguments: either a
  // typed error and no change, or exactly the shadow's result.
  void random_seq_op(const std::vector<int>& known) {
    std::uniform_int_distribution<int> pick(0, 99);
    const int kind = pick(rng_) % 6;
    int seq = known.empty() ? 0 : known[pick(rng_) % known.size()];
    int32_t maxpos = 0;
    for (const auto& [key, e] : shadow_) maxpos = std::max(maxpos, e.pos);
    std::uniform_int_distribution<int32_t> pp(0, maxpos + 2);
    int64_t p0 = pick(rng_) < 25 ? -1 : pp(rng_);
    int64_t p1 = pick(rng_) < 35 ? -1 : pp(rng_);
    if (p0 >= 0 && p1 >= 0 && p1 < p0) std::swap(p0, p1);
    bool bad_seq = false, bad_range = false;
    const int bad = pick(rng_);
    if (bad < 4) {
      seq = 64, bad_seq = true;
    } else if (bad < 6) {
      p0 = -5, bad_range = true;
    } else if (bad < 8) {
      p1 = int64_t{1} << 33, bad_range = true;
    } else if (bad < 9 && p0 >= 0 && p1 >= 0 && p0 != p1) {
      std::swap(p0, p1);
      bad_range = true;
    } else if (bad < 10) {
      seq = 40, bad_seq = true;  // never used: unknown
    }
    // compact takes no arguments; seq_keep no range.
    const bool invalid = kind == 5 ? false : kind == 2 ? bad_seq : bad_seq || bad_range;
    const auto before = snapshot();
    auto expect_unchanged = [&] {
      ASSERT_EQ(before, snapshot()) << "a failed operation changed the cache";
    };
    int32_t lo = p0 < 0 ? 0 : static_cast<int32_t>(std::min<int64_t>(p0, INT32_MAX));
    int32_t hi = p1 < 0 ? INT32_MAX : static_cast<int32_t>(std::min<int64_t>(p1, INT32_MAX));
    try {
      switch (kind) {
        case 0: {  // seq_rm, sometimes every sequence
          const int s = pick(rng_) < 10 && !invalid ? -1 : seq;
          cache_->seq_rm(s, p0, p1);
          ASSERT_FALSE(invalid);
          const uint64_t b = s < 0 ? ~uint64_t{0} : bit_of(s);
          for (auto it = shadow_.begin(); it != shadow_.end();) {
            if ((it->second.seqs & b) && in_range(it->second.pos, lo, hi)) it->second.seqs &= ~b;
            it = it->second.seqs ? std::next(it) : shadow_.erase(it);
          }
          break;
        }
        case 1: {  // seq_cp into another (maybe new) sequence
          const int dst = pick(rng_) % 4;
          cache_->seq_cp(seq, dst, p0, p1);
          ASSERT_FALSE(invalid);
          for (auto& [key, e] : shadow_)
            if ((e.seqs & bit_of(seq)) && in_range(e.pos, lo, hi)) e.seqs |= bit_of(dst);
          break;
        }
        case 2: {
          cache_->seq_keep(seq);
          ASSERT_FALSE(invalid);
          for (auto it = shadow_.begin(); it != shadow_.end();) {
            it->second.seqs &= bit_of(seq);
            it = it->second.seqs ? std::next(it) : shadow_.erase(it);
          }
          break;
        }
        case 3:
        case 4: {  // seq_add / seq_div
          const bool add = kind == 3;
          const int64_t arg = add ? static_cast<int64_t>(pick(rng_) % 21) - 10 : 1 + pick(rng_) % 4;
          if (add)
            cache_->seq_add(seq, p0, p1, arg);
          else
            cache_->seq_div(seq, p0, p1, arg);
          ASSERT_FALSE(invalid);
          const auto inv = rope_inv_freq(tiny_context().rope);
          for (auto it = shadow_.begin(); it != shadow_.end();) {
            ShadowEntry& e = it->second;
            if (!(e.seqs & bit_of(seq)) || !in_range(e.pos, lo, hi)) {
              ++it;
              continue;
            }
            const int64_t np = add ? int64_t{e.pos} + arg : e.pos / arg;
            if (np < 0) {
              it = shadow_.erase(it);
              continue;
            }
            if (np != e.pos) {
              Rotation r;
              r.set(np - e.pos, inv, false);
              r.apply(e.k.data());
              ++e.rotations;
              e.pos = static_cast<int32_t>(np);
            }
            ++it;
          }
          break;
        }
        case 5:
          cache_->compact();
          break;
      }
    } catch (const SequenceError&) {
      ASSERT_TRUE(invalid) << "unexpected SequenceError";
      expect_unchanged();
      ++g_operations;
      return;
    } catch (const UnsupportedOperation&) {
      if (kind == 1) {
        // Contiguous positions renumber a sequence: its entries cannot be shared.
        ASSERT_EQ(param_or(spec_.scorer, "pos"), "contiguous");
        expect_unchanged();
        ++g_operations;
        return;
      }
      ASSERT_TRUE(kind == 3 || kind == 4);
      // Only when a held entry in range is shared, or keys are quantized.
      bool shared = false;
      for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kKvHeads; ++h)
          for (const auto& e : cache_->store().entries(l, h))
            if ((e.seqs & bit_of(seq)) && in_range(e.pos, lo, hi) && e.seqs != bit_of(seq))
              shared = true;
      ASSERT_TRUE(shared || quantized_) << "UnsupportedOperation without a reason";
      expect_unchanged();
      ++g_operations;
      return;
    }
    ++g_operations;
    check(/*exact=*/true);
  }

  // Position, sequences and K/V of every held entry, for "nothing changed".
  std::vector<std::tuple<int, int32_t, int32_t, uint64_t, std::vector<float>>> snapshot() const {
    std::vector<std::tuple<int, int32_t, int32_t, uint64_t, std::vector<float>>> out;
    for_each_held([&](int hi, int32_t src, int32_t pos, uint64_t seqs, const std::string&, bool,
                      const KiviSegment*, int32_t, const float* k, const float* v) {
      std::vector<float> kv(k, k + kDim);
      kv.insert(kv.end(), v, v + kDim);
      out.emplace_back(hi, src, pos, seqs, std::move(kv));
    });
    std::sort(out.begin(), out.end());
    return out;
  }

  void replace_by_clone() {
    const auto before = snapshot();
    const MemoryReport m = cache_->memory();
    cache_ = cache_->clone();
    ASSERT_EQ(before, snapshot());
    ASSERT_EQ(m.hot, cache_->memory().hot);
    ASSERT_EQ(m.cold, cache_->memory().cold);
  }

 private:
  void check_values(int32_t src, const std::string& p, bool cold, const KiviSegment* ks, int32_t i,
                    const ShadowEntry& s, const float* k, const float* v) {
    auto within = [&](const float* got, const std::vector<float>& want, float bound,
                      const char* what) {
      for (int c = 0; c < kDim; ++c)
        ASSERT_LE(std::fabs(got[c] - want[c]), bound)
            << what << " of src " << src << " (" << p << (cold ? ", cold" : "") << ") channel "
            << c;
    };
    if (p == "f32") {
      if (s.rotations == 0) {
        // Bit-identical, hot or offloaded.
        ASSERT_TRUE(std::equal(k, k + kDim, s.k.begin()))
            << "f32 key of src " << src << (cold ? " (cold)" : "");
        ASSERT_TRUE(std::equal(v, v + kDim, s.v.begin()));
      } else {
        within(k, s.k, 1e-4f, "key");
        within(v, s.v, 0.0f, "value");
      }
      return;
    }
    if (p == "f16" || p == "bf16" || p == "int8" || p == "int4") {
      const CodecKind kind = p == "f16"    ? CodecKind::F16
                             : p == "bf16" ? CodecKind::BF16
                             : p == "int8" ? CodecKind::Int8
                                           : CodecKind::Int4;
      const RowCodec codec(kind, kDim, group_);
      within(k, s.k, codec.error_bound(s.k.data()) * 2.0f * (1 + s.rotations) + 1e-5f, "key");
      within(v, s.v, codec.error_bound(s.v.data()), "value");
      return;
    }
    ASSERT_EQ(p, "kivi2");
    ASSERT_NE(ks, nullptr);
    const float rot = s.rotations ? 1e-4f : 0.0f;
    if (ks->keys_mode() == KiviKeys::F32) {
      within(k, s.k, rot, "kivi f32 key");
    } else if (ks->keys_mode() == KiviKeys::Token) {
      within(k, s.k, i < ks->quantized_keys() ? ks->key_codec().error_bound(s.k.data()) : rot,
             "kivi per-token key");
    } else {
      for (int c = 0; c < kDim; ++c)
        ASSERT_LE(std::fabs(k[c] - s.k[c]), ks->key_bound(i, c) + 1e-5f * (1 + std::fabs(s.k[c])) +
                                                (s.rotations ? 1e-4f : 0.0f))
            << "kivi key of src " << src << " channel " << c;
    }
    within(v, s.v, i < ks->quantized_values() ? ks->value_codec().error_bound(s.v.data()) : 0.0f,
           "kivi value");
  }

  PolicySpec spec_;
  std::mt19937_64 rng_;
  std::unique_ptr<PolicyCache> cache_;
  Shadow shadow_;
  int group_ = kDim;
  bool quantized_ = false;
  bool half_ = false;
};

// --- one stream, no sequence operations: exact retention rules ---

struct StreamCase {
  std::string spec;
  int steps;
};

class StreamProperty : public ::testing::TestWithParam<StreamCase> {};

TEST_P(StreamProperty, BoundedAfterEveryStepAndKeepsWhatTheRuleSays) {
  const StreamCase& c = GetParam();
  Driver d(c.spec, 11);
  const PolicySpec& spec = d.spec();
  std::uniform_int_distribution<int> chunk(1, 7);
  int64_t appended = 0;
  for (int i = 0; i < c.steps; ++i) {
    const bool decode = i > c.steps / 3;
    const int n = decode ? 1 : chunk(d.rng());
    d.step(0, n, decode);
    appended += n;
    ASSERT_NO_FATAL_FAILURE(d.check(false, param_or(spec.scorer, "pos") == "contiguous"));
    d.prune();
    PolicyCache& cache = d.cache();
    const MemoryReport mem = cache.memory();
    uint64_t bound = 0;
    for (int l = 0; l < kLayers; ++l) {
      const int32_t b = cache.layer_budget(l);
      int64_t layer_held = 0;
      for (int h = 0; h < kKvHeads; ++h) {
        const int32_t held = cache.store().hot_entries(0, l, h);
        layer_held += held;
        // adakv moves budget between a layer's heads (the layer total is bounded below).
        if (spec.allocator.name != "adakv")
          ASSERT_LE(held, b) << "layer " << l << " head " << h << " over budget after step " << i;
        const auto srcs = cache.held_sources(l, h);
        // merge: one entry of the budget is the summary.
        const int64_t expect_n = std::min<int64_t>(appended, b - (spec.extra("merge") ? 1 : 0));
        if (spec.scorer.name == "window") {
          ASSERT_EQ(static_cast<int64_t>(srcs.size()), expect_n);
          ASSERT_EQ(srcs.front(), appended - expect_n) << "the window holds exactly the last W";
        }
        if (spec.scorer.name == "streaming") {
          const int64_t sinks = spec.scorer.get_int("sinks");
          ASSERT_EQ(static_cast<int64_t>(srcs.size()), expect_n);
          for (int64_t s = 0; s < std::min(sinks, appended); ++s)
            ASSERT_TRUE(cache.holds(l, h, s)) << "sink " << s << " evicted";
          for (int64_t s = std::max(sinks, appended - (b - sinks)); s < appended; ++s)
            ASSERT_TRUE(cache.holds(l, h, s)) << "recent token " << s << " evicted";
          if (spec.scorer.get("pos") == "contiguous") {
            const auto es = cache.store().entries(l, h);
            std::vector<int32_t> pos;
            for (const auto& e : es) pos.push_back(e.pos);
            std::sort(pos.begin(), pos.end());
            // Contiguous, ending at the newest token's position.
            for (size_t j = 0; j < pos.size(); ++j)
              ASSERT_EQ(pos[j], pos[0] + static_cast<int32_t>(j));
            ASSERT_EQ(cache.next_position(0), pos.back() + 1);
          }
        }
        if (spec.scorer.name == "h2o") {
          const int64_t recent = std::lround(spec.scorer.get_number("recent") * b);
          for (int64_t s = std::max<int64_t>(0, appended - recent); s < appended; ++s)
            ASSERT_TRUE(cache.holds(l, h, s)) << "recent token " << s << " evicted";
        }
      }
      ASSERT_LE(layer_held, int64_t{b} * kKvHeads) << "layer " << l << " over budget";
      // Largest bytes one entry can take: the main codec's, f32 where the
      // storage keeps f32 entries (mixed, KIVI's residual, the summary).
      const auto* rs = dynamic_cast<const RowSegment*>(cache.store().segment(l, 0, kMain));
      const bool has_f32 =
          spec.storage.name == "mixed" || spec.storage.name == "kivi2" || spec.extra("merge");
      const uint64_t per_entry = rs && !has_f32 ? 2 * rs->codec().row_bytes() : 2 * 4 * kDim;
      bound += static_cast<uint64_t>(b) * kKvHeads * per_entry;
    }
    ASSERT_LE(mem.hot.kv + mem.hot.scales, bound) << "hot K/V bytes above the budget's";
    ++g_operations;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Policies, StreamProperty,
    ::testing::Values(StreamCase{"window:budget=12", 1500},
                      StreamCase{"window:budget=12+int4:group=4", 1500},
                      StreamCase{"streaming:budget=12,sinks=3", 1500},
                      StreamCase{"streaming:budget=10,sinks=4,pos=contiguous", 1500},
                      StreamCase{"streaming:budget=10,sinks=2,pos=contiguous+f16", 1000},
                      StreamCase{"h2o:budget=12", 1500},
                      StreamCase{"h2o:budget=16,recent=0.25+int8:group=4", 1500},
                      StreamCase{"tova:budget=12+pyramid:beta=3", 1000},
                      StreamCase{"hybrid:budget=12+adakv", 1000},
                      StreamCase{"knorm:budget=12+kivi2:group=4,residual=8", 1000},
                      StreamCase{"knorm:budget=12+kivi2:group=4,residual=8,keys=token", 1000},
                      StreamCase{"h2o:budget=12+kivi2:group=4,residual=8,values=f32", 1000},
                      StreamCase{"window:budget=12+kivi2:group=4,residual=8,keys=f32", 1000},
                      StreamCase{"h2o:budget=16+offload:page=4", 500},
                      StreamCase{"window:budget=16+merge", 1000},
                      StreamCase{"random:budget=12+mixed:group=4", 1000}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

// --- every policy, random operations of every kind ---

class RandomOps : public ::testing::TestWithParam<std::string> {};

// "duo ... heads=@HEADS": the test writes the heads file when it runs (not
// when gtest lists the tests), (0, 1) and (1, 0) keeping everything; the
// file is this process's (tests/support/temp_cleanup removes it).
constexpr std::string_view kHeadsMark = "@HEADS";
std::string with_heads_file(std::string spec) {
  const size_t at = spec.find(kHeadsMark);
  if (at == std::string::npos) return spec;
  static_assert(kLayers == 2 && kKvHeads == 2);
  const std::string path = "/tmp/kvbench-duo-ops-" + std::to_string(getpid()) + ".txt";
  std::ofstream(path) << "0 0 0.1\n0 1 0.9\n1 0 0.8\n1 1 0.2\n";
  return spec.replace(at, kHeadsMark.size(), path);
}

TEST_P(RandomOps, ShadowModelHoldsAfterEveryOperation) {
  Driver d(with_heads_file(GetParam()), std::hash<std::string>()(GetParam()));
  const bool renumbers = param_or(d.spec().scorer, "pos") == "contiguous";
  std::uniform_int_distribution<int> pick(0, 999);
  std::vector<int> known;
  constexpr int kOps = 5000;
  for (int i = 0; i < kOps; ++i) {
    const int r = pick(d.rng());
    if (r < 550 || known.empty()) {
      const int seq = known.empty() || pick(d.rng()) < 50 ? pick(d.rng()) % 4
                                                          : known[pick(d.rng()) % known.size()];
      const bool decode = pick(d.rng()) < 500;
      d.step(seq, decode ? 1 : 1 + pick(d.rng()) % 6, decode);
      if (std::find(known.begin(), known.end(), seq) == known.end()) known.push_back(seq);
      ASSERT_NO_FATAL_FAILURE(d.check(false, renumbers));
      d.prune();
    } else if (r < 600) {
      d.cache().end_prefill();
      ++g_operations;
      ASSERT_NO_FATAL_FAILURE(d.check(false, renumbers));
      d.prune();
    } else if (r < 640) {
      d.cache().maintain(known[pick(d.rng()) % known.size()]);
      ++g_operations;
      ASSERT_NO_FATAL_FAILURE(d.check(false, renumbers));
      d.prune();
    } else if (r < 980) {
      ASSERT_NO_FATAL_FAILURE(d.random_seq_op(known));
      // A sequence stays known to the cache even when emptied; seq_cp adds.
      for (int s = 0; s < 4; ++s)
        if ((d.cache().store().known_sequences() & bit_of(s)) &&
            std::find(known.begin(), known.end(), s) == known.end())
          known.push_back(s);
    } else if (r < 995) {
      ASSERT_NO_FATAL_FAILURE(d.replace_by_clone());
      ++g_operations;
    } else {
      d.cache().clear();
      d.shadow().clear();
      known.clear();
      ++g_operations;
      ASSERT_NO_FATAL_FAILURE(d.check(true));
    }
    if (i == kOps - 1) RecordProperty("operations", kOps);
    // pos_min / pos_max against the entries.
    for (int s : known) {
      int32_t lo = INT32_MAX, hi = -1;
      for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kKvHeads; ++h)
          for (const auto& e : d.cache().store().entries(l, h))
            if (e.seqs & bit_of(s)) lo = std::min(lo, e.pos), hi = std::max(hi, e.pos);
      ASSERT_EQ(d.cache().pos_min(s), hi < 0 ? -1 : lo);
      ASSERT_EQ(d.cache().pos_max(s), hi);
    }
  }
}

// Every registered component (registry_specs), then combinations of them.
std::vector<std::string> random_ops_specs() {
  std::vector<std::string> specs = test::registry_specs(12);
  for (const char* combination :
       {"full+f16", "full+kivi2:group=4,residual=8", "streaming:budget=12,sinks=2,pos=contiguous",
        "snapkv:budget=16,window=4,kernel=3", "tova:budget=12+pyramid:beta=4",
        "knorm:budget=12+bf16", "random:budget=12+int8:group=4", "h2o:budget=12+int4:group=4+adakv",
        "window:budget=12+kivi2:group=4,residual=8",
        "window:budget=12+kivi2:group=4,residual=8,keys=token,values=f32",
        "h2o:budget=12+kivi2:group=4,residual=8,keys=f32", "h2o:budget=16+mixed:group=4,full=0.5",
        "window:budget=16+bf16+offload:page=4,tier=file", "h2o:budget=12,timing=every,every=3",
        "full+offload", "h2o:budget=12+offload:page=4,rule=importance,threshold=0.05",
        "duo:budget=12,sinks=2,retrieval=0.5,heads=@HEADS",
        "cam:budget=12,start=0.25,span=4+int8:group=4"})
    specs.push_back(combination);
  return specs;
}

INSTANTIATE_TEST_SUITE_P(Policies, RandomOps, ::testing::ValuesIn(random_ops_specs()),
                         [](const auto& info) { return "spec" + std::to_string(info.index); });

// ctest runs each test in its own process, so the total is printed when the
// binary runs these tests together: the stream cases' steps + every spec's
// 5,000 random operations.
class OperationCount : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_operations > 0)
      std::printf("policy property tests: %lld operations\n", static_cast<long long>(g_operations));
  }
};
const auto* const kOperationCount = ::testing::AddGlobalTestEnvironment(new OperationCount);

}  // namespace
}  // namespace kvbench
