#include "policies/query_stats.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace kvbench {

QueryStats::QueryStats(int n_layers, int n_q_heads, int head_dim, int skip, const RopeConfig& rope)
    : QueryStats(n_q_heads, head_dim, skip, std::vector<RopeConfig>(n_layers, rope)) {}

QueryStats::QueryStats(int n_q_heads, int head_dim, int skip,
                       std::span<const RopeConfig> layer_rope)
    : n_q_heads_(n_q_heads),
      head_dim_(head_dim),
      skip_(skip),
      count_(layer_rope.size(), 0),
      sum_(layer_rope.size() * n_q_heads * head_dim, 0.0),
      outer_(layer_rope.size() * n_q_heads * head_dim * head_dim, 0.0) {
  for (const RopeConfig& r : layer_rope) {
    inv_freq_.push_back(rope_inv_freq(r));
    neox_.push_back(r.neox ? 1 : 0);
  }
}

void QueryStats::begin(int seq) {
  if (seq == seq_) return;
  clear();
  seq_ = seq;
}

void QueryStats::clear() {
  std::fill(count_.begin(), count_.end(), 0);
  std::fill(sum_.begin(), sum_.end(), 0.0);
  std::fill(outer_.begin(), outer_.end(), 0.0);
}

void QueryStats::add(int layer, const float* q, std::span<const int32_t> positions) {
  const int d = head_dim_;
  const int64_t qd = int64_t{n_q_heads_} * d;
  // The counted queries, un-rotated: rows_[h][t][d] for h < n_q_heads.
  int64_t n = 0;
  for (int32_t p : positions) n += p >= skip_;
  if (n == 0) return;
  rows_.resize(static_cast<size_t>(n_q_heads_) * n * d);
  one_.resize(qd);
  const auto rotate = neox_[layer] ? rope_rotate_neox : rope_rotate;
  int64_t t = 0;
  for (size_t i = 0; i < positions.size(); ++i) {
    if (positions[i] < skip_) continue;
    std::copy(q + i * qd, q + (i + 1) * qd, one_.begin());
    rotate(one_.data(), n_q_heads_, d, -int64_t{positions[i]}, inv_freq_[layer]);
    for (int h = 0; h < n_q_heads_; ++h)
      std::copy(one_.begin() + int64_t{h} * d, one_.begin() + int64_t{h + 1} * d,
                rows_.begin() + (int64_t{h} * n + t) * d);
    ++t;
  }
  count_[layer] += n;
  for (int h = 0; h < n_q_heads_; ++h) {
    const double* x = rows_.data() + int64_t{h} * n * d;
    double* s = sum_.data() + (int64_t{layer} * n_q_heads_ + h) * d;
    for (int64_t r = 0; r < n; ++r)
      for (int c = 0; c < d; ++c) s[c] += x[r * d + c];
    // outer += x^T x (upper triangle), one BLAS call per head.
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, static_cast<int>(n), 1.0, x, d, 1.0,
                outer_.data() + (int64_t{layer} * n_q_heads_ + h) * d * d, d);
  }
}

void QueryStats::mean(int layer, int head, double* out) const {
  const int64_t n = count_[layer];
  const double* s = sum_.data() + (int64_t{layer} * n_q_heads_ + head) * head_dim_;
  for (int c = 0; c < head_dim_; ++c) out[c] = n ? s[c] / n : 0.0;
}

void QueryStats::covariance(int layer, int head, double* out) const {
  const int d = head_dim_;
  const int64_t n = count_[layer];
  std::vector<double> mu(d);
  mean(layer, head, mu.data());
  const double* o = outer_.data() + (int64_t{layer} * n_q_heads_ + head) * d * d;
  for (int r = 0; r < d; ++r)
    for (int c = r; c < d; ++c) {
      const double v = n ? o[r * d + c] / n - mu[r] * mu[c] : 0.0;
      out[r * d + c] = out[c * d + r] = v;
    }
}

uint64_t QueryStats::bytes() const {
  return (sum_.size() + outer_.size()) * sizeof(double) + count_.size() * 8;
}

void QueryStats::save(StateWriter& out) const {
  out.tag(state_tag("QSTA"));
  out.i32(seq_);
  out.array(count_);
  out.array(sum_);
  out.array(outer_);
}

void QueryStats::load(StateReader& in, int max_seqs) {
  in.expect_tag(state_tag("QSTA"), "query statistics");
  seq_ = in.i32("query statistics sequence");
  if (seq_ < -1 || seq_ >= max_seqs) in.fail("query statistics sequence " + std::to_string(seq_));
  in.array(count_, count_.size(), "query counts");
  for (int64_t c : count_)
    if (c < 0) in.fail("a negative query count");
  in.array(sum_, sum_.size(), "query sums");
  in.array(outer_, outer_.size(), "query outer products");
  // A scorer sorts by what it computes from these: no NaN or infinity.
  for (const auto* v : {&sum_, &outer_})
    for (double x : *v)
      if (!std::isfinite(x)) in.fail("a query statistic that is not a finite number");
}

}  // namespace kvbench
