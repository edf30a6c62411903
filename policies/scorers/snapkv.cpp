// The `snapkv` scorer (its declaration at the end).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "model/common/error.h"
#include "policies/params.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

// The window's attention to each candidate: a causal softmax of
// q.k / sqrt(head_dim) over every entry the sequence sees, for each of the
// layer's last window queries of the KV head's query heads, summed.
// votes: [in.n], zeroed by the caller.
void window_votes(const ScoreInput& in, float* votes) {
  ScoreContext& cx = *in.context;
  const QueryWindow& w = cx.queries();
  const int count = w.count(in.layer);
  if (count == 0) return;
  const int32_t n = cx.view_size();
  const int hd = cx.head_dim();
  const int group = cx.group();
  const float* K = cx.keys();
  const int32_t* P = cx.view_positions();
  const int m = count * group;
  // Q: [count * group][hd], the window's queries of this KV head's group,
  // oldest first.
  static thread_local std::vector<float> q, scores;
  static thread_local std::vector<int32_t> qpos;
  q.resize(static_cast<size_t>(m) * hd);
  qpos.resize(m);
  for (int i = 0; i < count; ++i) {
    for (int g = 0; g < group; ++g) {
      const float* src = w.query(in.layer, i) + int64_t{in.kv_head * group + g} * hd;
      std::copy(src, src + hd, q.begin() + int64_t{i * group + g} * hd);
      qpos[i * group + g] = w.position(in.layer, i);
    }
  }
  scores.resize(static_cast<size_t>(m) * n);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, hd, scale, q.data(), hd, K, hd, 0.0f,
              scores.data(), n);
  // Causal softmax of each row, summed into the votes.
  for (int row = 0; row < m; ++row) {
    float* s = scores.data() + int64_t{row} * n;
    float mx = -std::numeric_limits<float>::infinity();
    for (int32_t j = 0; j < n; ++j)
      if (P[j] <= qpos[row]) mx = std::max(mx, s[j]);
    if (!std::isfinite(mx)) continue;
    double sum = 0.0;
    for (int32_t j = 0; j < n; ++j) {
      s[j] = P[j] <= qpos[row] ? std::exp(s[j] - mx) : 0.0f;
      sum += s[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int32_t j = 0; j < in.n; ++j) votes[j] += s[j] * inv;
  }
}

// SnapKV: once after prefill. Every entry's votes from the last `window`
// prompt queries (window_votes) are pooled over neighbouring positions
// (kernel k, zero padding; avg divides by k as avg_pool1d does), the
// window's own entries are kept, the rest of the budget goes to the highest
// pooled votes.
class SnapKvScorer final : public Scorer {
 public:
  explicit SnapKvScorer(const ComponentSpec& spec)
      : Scorer(spec),
        window_(static_cast<int32_t>(spec.get_int("window"))),
        kernel_(static_cast<int32_t>(spec.get_int("kernel"))),
        avg_(spec.get("pool") == "avg") {
    timing_ = Timing::Once;
  }
  ScorerNeeds needs() const override { return {.window_queries = window_}; }
  int32_t reserved(int32_t budget) const override { return std::min(window_, budget); }
  void priorities(const ScoreInput& in, float* out) const override {
    // The window: the `window_` newest entries. The rest, in position order.
    static thread_local std::vector<int32_t> order;
    static thread_local std::vector<float> pooled, votes;
    votes.assign(in.n, 0.0f);
    window_votes(in, votes.data());
    std::fill(out, out + in.n, 0.0f);
    protect_newest(in, window_, out);
    order.clear();
    for (int32_t i = 0; i < in.n; ++i)
      if (out[i] != kKeep) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return in.pos[a] != in.pos[b] ? in.pos[a] < in.pos[b] : in.src[a] < in.src[b];
    });
    const int32_t m = static_cast<int32_t>(order.size());
    const int32_t half = kernel_ / 2;
    pooled.assign(m, 0.0f);
    for (int32_t j = 0; j < m; ++j) {
      float acc = avg_ ? 0.0f : -std::numeric_limits<float>::infinity();
      for (int32_t t = std::max(0, j - half); t <= std::min(m - 1, j + half); ++t) {
        const float v = votes[order[t]];
        acc = avg_ ? acc + v : std::max(acc, v);
      }
      pooled[j] = avg_ ? acc / static_cast<float>(kernel_) : acc;
    }
    for (int32_t j = 0; j < m; ++j) out[order[j]] = pooled[j];
  }

 private:
  int32_t window_, kernel_;
  bool avg_;
};

void check_snapkv(const PolicySpec& s, const ComponentSpec& self) {
  const Budget b = self.get_budget("budget");
  if (!b.ratio && b.value <= static_cast<double>(self.get_int("window")))
    throw InputError("policy '" + to_string(s) + "': snapkv budget must exceed its window");
  if (self.get_int("kernel") % 2 == 0)
    throw InputError("policy '" + to_string(s) + "': snapkv kernel must be odd");
}

}  // namespace

ComponentInfo declare_snapkv() {
  ComponentInfo c{
      "snapkv",
      ComponentKind::Scorer,
      "SnapKV, once after prefill: the last `window` prompt queries' attention, "
      "pooled, picks the rest of the budget; the window itself is kept",
      {budget_param(),
       {"window", ParamType::Int, "32", "observation window (last prompt queries)", 1, 1e6},
       {"kernel", ParamType::Int, "7", "1-D pooling kernel over positions (odd)", 1, 1e3},
       {"pool", ParamType::Choice, "max", "pooling", 0, 0, {"max", "avg"}},
       layers_param()}};
  c.make_scorer = scorer_component<SnapKvScorer>("", "", {}).make_scorer;
  c.check = check_snapkv;
  c.units = ScoreUnits::WindowSum;
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "window=4,kernel=3";
  return c;
}

}  // namespace kvbench
