// The `cam` scorer (policies/registry.cpp has its row and parameters): Cache
// Merging, Zhang et al. 2024 (ICML, "CaM: Cache Merging for Memory-efficient
// LLMs Inference", zyxxmu/cam). Eviction is StreamingLLM's: the first tokens
// (`start` share of the budget) and the most recent ones stay. What CaM adds:
// an evicted token i does not vanish; with probability
//   p_i = clamp(A_i / mean_{j in T_i} A_j, 0, 1)
// its value is spread over T_i, the `span` kept tokens that follow it:
//   v_j += v_i / |T_i|  for j in T_i,
// where A is the attention each token has received so far (summed over the
// observed queries and, here, the KV head's group of query heads). Keys are
// not merged. The Bernoulli draw restores a_i v_i in expectation: a token
// that drew little attention rarely moves the kept values.
// Where kvbench differs (docs/LITERATURE.md): the draw is a seeded hash of
// (seed, layer, head, stream index), so a token's fate does not depend on
// when maintenance runs; every evicted token merges, the prompt's too (the
// paper streams token by token, where every token leaving the window merges);
// |T_i| < span near the end of the cache divides by |T_i|. during=decode
// merges only tokens evicted by decode steps (the official HELM variant:
// the prompt's evicted middle is dropped unmerged).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "policies/scorers/budget_scorer.h"

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

class CamScorer final : public BudgetScorer {
 public:
  explicit CamScorer(const ComponentSpec& spec)
      : BudgetScorer(spec),
        start_(spec.get_number("start")),
        span_(static_cast<int32_t>(spec.get_int("span"))),
        merge_(spec.get("merge") == "on"),
        decode_only_(spec.get("during") == "decode") {}
  std::string_view name() const override { return "cam"; }
  ScorerNeeds needs() const override {
    ScorerNeeds n;
    n.attention = true;
    return n;
  }
  int32_t reserved(int32_t budget) const override { return start_tokens(budget); }
  void priorities(const ScoreInput& in, float* out) const override {
    sinks_then_recent(in, start_tokens(in.keep), out);
  }

  // merge=off: the same eviction, nothing merged (the ablation's control).
  bool merges_values() const override { return merge_; }
  void value_merges(const ScoreInput& in, const uint8_t* kept,
                    std::vector<ValueMerge>& out) const override {
    if (decode_only_ && !in.decode) return;  // the prompt's evictions drop plainly
    // Kept candidates in stream order: T_i is the first `span` after src_i.
    std::vector<int32_t> stay, gone;
    for (int32_t i = 0; i < in.n; ++i) (kept[i] ? stay : gone).push_back(i);
    std::sort(stay.begin(), stay.end(),
              [&](int32_t a, int32_t b) { return in.src[a] < in.src[b]; });
    std::sort(gone.begin(), gone.end(),
              [&](int32_t a, int32_t b) { return in.src[a] < in.src[b]; });
    const int acc = in.layout.acc;
    auto attention = [&](int32_t i) {
      return acc >= 0 ? static_cast<double>(in.stats[int64_t{i} * in.layout.n + acc]) : 0.0;
    };
    for (int32_t i : gone) {
      const auto first =
          std::upper_bound(stay.begin(), stay.end(), in.src[i],
                           [&](int32_t s, int32_t cand) { return s < in.src[cand]; });
      const int32_t m = static_cast<int32_t>(std::min<std::ptrdiff_t>(span_, stay.end() - first));
      if (m == 0) continue;
      double mean = 0.0;
      for (int32_t t = 0; t < m; ++t) mean += attention(first[t]) / m;
      const double a = attention(i);
      const double p = mean > 0.0 ? std::clamp(a / mean, 0.0, 1.0) : (a > 0.0 ? 1.0 : 0.0);
      if (draw(in.seed, in.layer, in.kv_head, in.src[i]) >= p) continue;
      for (int32_t t = 0; t < m; ++t) out.push_back({i, first[t], 1.0f / static_cast<float>(m)});
    }
  }

 private:
  int32_t start_tokens(int32_t budget) const {
    return static_cast<int32_t>(std::lround(start_ * budget));
  }
  double start_;
  int32_t span_;
  bool merge_;
  bool decode_only_;
};

}  // namespace

std::shared_ptr<const Scorer> make_cam_scorer(const ComponentSpec& s) {
  return std::make_shared<CamScorer>(s);
}

}  // namespace kvbench
