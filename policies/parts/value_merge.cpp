#include "policies/parts/value_merge.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/common/error.h"

namespace kvbench {
namespace {

// Uniform in [0, 1) from (seed, layer, head, src): splitmix64's finaliser.
double draw(uint64_t seed, int layer, int head, int32_t src) {
  uint64_t z = (seed + 0x632BE59BD9B4E019ull) * 0x9E3779B97F4A7C15ull +
               (static_cast<uint64_t>(layer) << 48) + (static_cast<uint64_t>(head) << 32) +
               static_cast<uint32_t>(src);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

}  // namespace

void plan_value_merges(const ScoreInput& in, const uint8_t* kept, int32_t span,
                       std::vector<ValueMerge>& out) {
  static thread_local std::vector<int32_t> stay, gone;
  // Kept candidates in stream order: T_i is the first `span` after src_i.
  stay.clear();
  gone.clear();
  for (int32_t i = 0; i < in.n; ++i) (kept[i] ? stay : gone).push_back(i);
  const auto by_src = [&](int32_t a, int32_t b) { return in.src[a] < in.src[b]; };
  std::sort(stay.begin(), stay.end(), by_src);
  std::sort(gone.begin(), gone.end(), by_src);
  const int acc = in.layout.acc;
  const auto attention = [&](int32_t i) {
    return acc >= 0 ? static_cast<double>(in.stats[int64_t{i} * in.layout.n + acc]) : 0.0;
  };
  out.clear();
  for (int32_t i : gone) {
    const auto first = std::upper_bound(stay.begin(), stay.end(), in.src[i],
                                        [&](int32_t s, int32_t cand) { return s < in.src[cand]; });
    const int32_t m = static_cast<int32_t>(std::min<std::ptrdiff_t>(span, stay.end() - first));
    if (m == 0) continue;
    double mean = 0.0;
    for (int32_t t = 0; t < m; ++t) mean += attention(first[t]) / m;
    const double a = attention(i);
    const double p = mean > 0.0 ? std::clamp(a / mean, 0.0, 1.0) : (a > 0.0 ? 1.0 : 0.0);
    if (draw(in.seed, in.layer, in.kv_head, in.src[i]) >= p) continue;
    for (int32_t t = 0; t < m; ++t) out.push_back({i, first[t], 1.0f / static_cast<float>(m)});
  }
}

namespace {

class ValueMergePart final : public Part {
 public:
  ValueMergePart(int32_t span, bool decode_only) : span_(span), decode_only_(decode_only) {}

  void configure(CacheSetup& s) const override {
    if (s.store.layout == StoreConfig::Layout::Kivi)
      throw InputError("policy '" + to_string(s.spec) + "': '" + s.spec.scorer.name +
                       "' merges values into kept entries in place, which KIVI's blocks cannot "
                       "hold; use a row storage (f32, f16, bf16, int8, int4, mixed)");
  }
  bool changes_values() const override { return true; }

  // The merges between the head's candidates, applied before the evicted
  // ones leave. The store applies a group only when the evicted entry and
  // all its targets belong to the maintained sequence alone (an entry
  // another sequence shares must not change under it).
  void before_eviction(const HeadEviction& e) const override {
    if (decode_only_ && !e.input.decode) return;  // the prompt's evictions drop plainly
    static thread_local std::vector<uint8_t> kept;
    static thread_local std::vector<ValueMerge> merges;
    kept.assign(e.input.n, 1);
    for (int32_t i = 0; i < e.drop; ++i) kept[e.order[i]] = 0;
    plan_value_merges(e.input, kept.data(), span_, merges);
    e.store.merge_values(e.seq, e.layer, e.kv_head, e.cand.refs, merges);
  }

 private:
  int32_t span_;
  bool decode_only_;
};

}  // namespace

std::shared_ptr<const Part> make_value_merge_part(int32_t span, bool decode_only) {
  return std::make_shared<ValueMergePart>(span, decode_only);
}

}  // namespace kvbench
