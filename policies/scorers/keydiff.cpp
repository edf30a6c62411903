// The `keydiff` scorer (its declaration at the end): KeyDiff (2025, arXiv
// 2504.15364; kvpress's KeyDiffPress). Keys that differ most from the
// head's typical key are kept: the anchor is the mean of the head's
// normalised keys, a = (1/n) sum_j k_j / max(|k_j|, 1e-12), and an entry's
// priority is -cos(k_i, a) = -(k_i . a) / max(|k_i| |a|, 1e-8). Keys only
// (rotated, as stored): no queries, no attention, no window; the anchor is
// over every entry the head's view holds. Once after prefill by default, as
// kvpress compresses. kvpress's block variant (BlockPress) is not this one.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "policies/params.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

class KeyDiffScorer final : public Scorer {
 public:
  using Scorer::Scorer;
  void priorities(const ScoreInput& in, float* out) const override {
    ScoreContext& cx = *in.context;
    const int d = cx.head_dim();
    const int32_t n = cx.view_size();
    const float* k = cx.keys();  // [n][d], the candidates first
    static thread_local std::vector<double> anchor;
    anchor.assign(d, 0.0);
    for (int32_t j = 0; j < n; ++j) {
      const float* kj = k + int64_t{j} * d;
      const double norm = std::max(std::sqrt(dot(kj, kj, d)), 1e-12);
      for (int c = 0; c < d; ++c) anchor[c] += kj[c] / norm / n;
    }
    double anchor_norm = 0.0;
    for (int c = 0; c < d; ++c) anchor_norm += anchor[c] * anchor[c];
    anchor_norm = std::sqrt(anchor_norm);
    for (int32_t i = 0; i < in.n; ++i) {
      const float* ki = k + int64_t{i} * d;
      double ka = 0.0;
      for (int c = 0; c < d; ++c) ka += ki[c] * anchor[c];
      const double norms = std::max(std::sqrt(dot(ki, ki, d)) * anchor_norm, 1e-8);
      out[i] = static_cast<float>(-ka / norms);
    }
  }

 private:
  static double dot(const float* a, const float* b, int d) {
    double s = 0.0;
    for (int c = 0; c < d; ++c) s += static_cast<double>(a[c]) * b[c];
    return s;
  }
};

}  // namespace

ComponentInfo declare_keydiff() {
  return scorer_component<KeyDiffScorer>(
      "keydiff",
      "KeyDiff: keeps the keys least like the head's mean normalised key (lowest cosine; keys "
      "only)",
      scorer_params("once"));
}

}  // namespace kvbench
