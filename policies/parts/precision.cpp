// The `mixed` storage (precision by importance), as a part: the kept
// entries of highest priority stay in f32, the rest are quantized (and stay
// quantized). Maintenance runs at every step for it, evicting or not.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "policies/params.h"
#include "policies/parts/storage.h"

namespace kvbench {
namespace {

class PrecisionPart final : public Part {
 public:
  explicit PrecisionPart(const ComponentSpec& spec)
      : spec_(spec), full_(spec.get_number("full")), eight_(spec.get("bits") == "8") {}

  void configure(CacheSetup& s) const override {
    const int hd = s.ctx.shape.head_dim;
    s.store.layout = StoreConfig::Layout::Mixed;
    s.store.codec =
        RowCodec(eight_ ? CodecKind::Int8 : CodecKind::Int4, hd, storage_group(spec_, hd));
  }
  bool maintains_without_eviction() const override { return true; }

  // Each head's priorities by stream index, for the demotion after eviction
  // (eviction moves entries around).
  void before_evictions(LayerWork& w) const override {
    const size_t H = w.cand.size();
    w.head_pairs.resize(H);
    for (size_t h = 0; h < H; ++h) {
      auto& hp = w.head_pairs[h];
      hp.clear();
      for (int32_t i = 0; i < w.cand[h].size(); ++i)
        hp.emplace_back(w.cand[h].src[i], w.prio[h][i]);
      std::sort(hp.begin(), hp.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
    }
  }

  // The highest-priority share of the kept entries stays in f32, the rest is encoded.
  void after_evictions(LayerWork& w, bool evicted, CacheStore& store) const override {
    const int H = static_cast<int>(w.cand.size());
    for (int h = 0; h < H; ++h) {
      Candidates& c = w.cand[h];
      const auto& hp = w.head_pairs[h];
      if (evicted) store.gather(w.seq, w.layer, h, c);
      int32_t full = 0;
      for (const auto& r : c.refs) full += r.seg == kIncoming;
      const int32_t target = static_cast<int32_t>(std::lround(full_ * c.size()));
      if (full <= target) continue;
      w.order.clear();
      for (int32_t i = 0; i < c.size(); ++i)
        if (c.refs[i].seg == kIncoming) w.order.push_back(i);
      auto prio_of = [&](int32_t i) {
        auto it = std::lower_bound(hp.begin(), hp.end(), c.src[i],
                                   [](const auto& e, int32_t s) { return e.first < s; });
        return it != hp.end() && it->first == c.src[i] ? it->second : static_cast<float>(c.src[i]);
      };
      std::sort(w.order.begin(), w.order.end(), [&](int32_t a, int32_t b) {
        const float pa = prio_of(a), pb = prio_of(b);
        return pa != pb ? pa < pb : c.src[a] < c.src[b];
      });
      w.refs.clear();
      for (int32_t i = 0; i < full - target; ++i) w.refs.push_back(c.refs[w.order[i]]);
      store.demote(w.layer, h, w.refs);
    }
  }

 private:
  ComponentSpec spec_;
  double full_;
  bool eight_;
};

std::vector<std::shared_ptr<const Part>> mixed_parts(const ComponentSpec& s, const PartEnv&) {
  return {std::make_shared<PrecisionPart>(s)};
}

}  // namespace

ComponentInfo declare_mixed() {
  ComponentInfo c{
      "mixed",
      ComponentKind::Storage,
      "precision by importance: the highest-priority entries in f32, the rest quantized",
      {{"full", ParamType::Number, "0.25", "share of kept entries held in f32", 0, 1},
       {"bits", ParamType::Choice, "4", "precision of the rest", 0, 0, {"4", "8"}},
       group_param()}};
  c.make_parts = mixed_parts;
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "group=4,full=0.5";
  return c;
}

}  // namespace kvbench
