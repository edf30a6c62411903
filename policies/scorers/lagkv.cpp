// The `lagkv` scorer (its declaration at the end): LagKV (2025, arXiv
// 2504.04704; kvpress's LagKVPress). Tokens are judged against the next
// partition of the context, without queries: after `sinks` tokens the
// head's entries, in position order, are cut into partitions of `lag`; for
// partition p, each channel of its keys X is scaled by the next partition
// R's range, Z = (X - min_R) / (max_R - min_R), a token's spread is the
// standard deviation of its Z over the channels (d - 1 in the divisor), and
// a softmax over the partition's tokens turns spreads into scores; the same
// on the values, the two averaged, then replaced by the token's rank inside
// its partition / lag (every partition keeps about as many). The sinks and
// the tail (the last full partition and what follows) score 1. Fewer than
// sinks + 2 lag entries: sinks then recency (StreamingLLM), as kvpress.
// Where kvbench differs: a channel whose reference range is 0 scales to 0
// (kvpress divides by zero); ties are broken as everywhere in kvbench (the
// older entry goes first), kvpress's topk breaks them its own way.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "policies/params.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

class LagKvScorer final : public Scorer {
 public:
  explicit LagKvScorer(const ComponentSpec& spec)
      : Scorer(spec),
        sinks_(static_cast<int32_t>(spec.get_int("sinks"))),
        lag_(static_cast<int32_t>(spec.get_int("lag"))) {}
  int32_t reserved(int32_t budget) const override { return std::min(sinks_, budget); }

  void priorities(const ScoreInput& in, float* out) const override {
    // Candidates in position order (ties: arrival).
    static thread_local std::vector<int32_t> order;
    order.resize(in.n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return in.pos[a] != in.pos[b] ? in.pos[a] < in.pos[b] : in.src[a] < in.src[b];
    });
    const int32_t n = in.n, S = std::min(sinks_, n);
    if (n < sinks_ + 2 * lag_) {
      for (int32_t t = 0; t < n; ++t)
        out[order[t]] = t < S ? 1.0f : static_cast<float>(t - S) / static_cast<float>(n - S);
      return;
    }
    const int32_t parts = (n - S) / lag_;
    for (int32_t t = 0; t < n; ++t) out[order[t]] = 1.0f;  // sinks and tail
    ScoreContext& cx = *in.context;
    const int d = cx.head_dim();
    static thread_local std::vector<double> score, kscore;
    static thread_local std::vector<int32_t> rank;
    // Partitions 0 .. parts - 2, each against the next; the last full one
    // (the reference of the one before it) belongs to the tail.
    for (int32_t p = 0; p + 1 < parts; ++p) {
      const int32_t begin = S + p * lag_;
      spreads(cx.keys(), d, order, begin, kscore);
      spreads(cx.values(), d, order, begin, score);
      for (int32_t t = 0; t < lag_; ++t) score[t] = (score[t] + kscore[t]) / 2;
      rank.resize(lag_);
      std::iota(rank.begin(), rank.end(), 0);
      std::sort(rank.begin(), rank.end(), [&](int32_t a, int32_t b) {
        return score[a] != score[b] ? score[a] < score[b] : a < b;
      });
      for (int32_t r = 0; r < lag_; ++r)
        out[order[begin + rank[r]]] = static_cast<float>(r) / static_cast<float>(lag_);
    }
  }

 private:
  // Softmax over the partition [begin, begin + lag) (in `order`) of each
  // token's spread against the next partition: out [lag].
  void spreads(const float* rows, int d, const std::vector<int32_t>& order, int32_t begin,
               std::vector<double>& out) const {
    static thread_local std::vector<double> lo, hi;
    lo.assign(d, INFINITY);
    hi.assign(d, -INFINITY);
    for (int32_t t = begin + lag_; t < begin + 2 * lag_; ++t)
      for (int c = 0; c < d; ++c) {
        const double x = rows[int64_t{order[t]} * d + c];
        lo[c] = std::min(lo[c], x);
        hi[c] = std::max(hi[c], x);
      }
    out.resize(lag_);
    double top = -INFINITY;
    for (int32_t t = 0; t < lag_; ++t) {
      const float* x = rows + int64_t{order[begin + t]} * d;
      double mean = 0.0, sq = 0.0;
      for (int c = 0; c < d; ++c) {
        const double range = hi[c] - lo[c];
        const double z = range > 0 ? (x[c] - lo[c]) / range : 0.0;
        mean += z;
        sq += z * z;
      }
      mean /= d;
      out[t] = std::sqrt(std::max(0.0, (sq - d * mean * mean) / (d - 1)));
      top = std::max(top, out[t]);
    }
    double sum = 0.0;
    for (double& s : out) sum += (s = std::exp(s - top));
    for (double& s : out) s /= sum;
  }

  int32_t sinks_, lag_;
};

}  // namespace

ComponentInfo declare_lagkv() {
  ComponentInfo c = scorer_component<LagKvScorer>(
      "lagkv",
      "LagKV: a token's keys and values scaled by the next partition's range; the spread over "
      "channels, ranked within its partition (no queries); sinks and the tail kept",
      scorer_params("once", {{"sinks", ParamType::Int, "4", "first tokens always kept", 0, 1e6},
                             {"lag", ParamType::Int, "128", "tokens per partition", 2, 1e6}}));
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "lag=4";
  return c;
}

}  // namespace kvbench
