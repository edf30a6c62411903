// The `expected` scorer (its declaration at the end):
// expected attention, as NVIDIA kvpress's ExpectedAttentionPress (Devoto et
// al. 2025, arXiv 2510.00636). Every entry is scored by the attention the
// queries still to come are expected to pay it. Each query head's future
// queries are modelled as a Gaussian: the mean mu and covariance S of the
// prompt's queries before RoPE (the first `sinks` positions left out, their
// queries are outliers), moved by R, the RoPE rotation averaged over the
// next `future` positions. For a key k (rotated at its position):
//
//   z(k) = (R mu).k / sqrt(d) + k^T (R S R^T) k / (2 d)      (covariance=on)
//
// softmax over the head's candidates other than the first `sinks` tokens
// (which are kept), averaged over the KV head's query heads, times the
// value's L2 norm (vnorm=on). The priority is the logarithm of that score
// (same order; no float underflow when the expected attention is peaked). Computed as u = R^T k: (R
// mu).k = mu.u and k^T R S R^T k = u^T S u. R is the layer's RoPE, in its
// pairing (a gemma3 local layer has its own base; NEOX pairs i with i + d/2).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "policies/params.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

class ExpectedScorer final : public Scorer {
 public:
  explicit ExpectedScorer(const ComponentSpec& spec)
      : Scorer(spec),
        future_(static_cast<int>(spec.get_int("future"))),
        sinks_(static_cast<int32_t>(spec.get_int("sinks"))),
        window_(static_cast<int32_t>(spec.get_int("window"))),
        covariance_(spec.get("covariance") == "on"),
        vnorm_(spec.get("vnorm") == "on") {}
  ScorerNeeds needs() const override { return {.query_stats = true, .query_stats_skip = sinks_}; }
  int32_t reserved(int32_t budget) const override { return std::min(sinks_ + window_, budget); }

  void priorities(const ScoreInput& in, float* out) const override {
    ScoreContext& cx = *in.context;
    const QueryStats* stats = cx.query_stats();
    if (!stats || stats->count(in.layer) == 0) {
      // No query seen past the sinks yet: nothing to model, keep the newest.
      for (int32_t i = 0; i < in.n; ++i) out[i] = static_cast<float>(in.src[i]);
      protect_oldest(in, sinks_, out);
      protect_newest(in, window_, out);
      return;
    }
    const int d = cx.head_dim(), group = cx.group();
    const int32_t n = in.n;
    const RopeConfig& rope = cx.rope();
    const std::vector<float> inv_freq = rope_inv_freq(rope);
    // R averaged over positions [now, now + future): per rotated pair a
    // mean cosine and sine.
    const int pairs = static_cast<int>(inv_freq.size());
    std::vector<double> cbar(pairs, 0.0), sbar(pairs, 0.0);
    for (int i = 0; i < pairs; ++i) {
      for (int f = 0; f < future_; ++f) {
        const double angle = static_cast<double>(in.now + f) * inv_freq[i];
        cbar[i] += std::cos(angle);
        sbar[i] += std::sin(angle);
      }
      cbar[i] /= future_;
      sbar[i] /= future_;
    }
    // u = R^T k for every candidate: [n][d]. Pair i is dimensions (2i,
    // 2i + 1), or (i, i + pairs) in the NEOX pairing (model/ops/rope.h).
    const float* keys = cx.keys();
    static thread_local std::vector<double> u, su, mu, cov, z, lp;
    u.resize(static_cast<size_t>(n) * d);
    const int stride = rope.neox ? 1 : 2, offset = rope.neox ? pairs : 1;
    for (int32_t j = 0; j < n; ++j) {
      const float* k = keys + int64_t{j} * d;
      double* uj = u.data() + int64_t{j} * d;
      for (int c = 2 * pairs; c < d; ++c) uj[c] = k[c];
      for (int i = 0; i < pairs; ++i) {
        const int a = stride * i, b = a + offset;
        const double kx = k[a], ky = k[b];
        uj[a] = cbar[i] * kx + sbar[i] * ky;
        uj[b] = -sbar[i] * kx + cbar[i] * ky;
      }
    }
    // Log-probabilities per query head of the group: lp[g][j]. Priorities
    // are logarithms (the same order as the probabilities): attention this
    // peaked underflows a float, and ties among zeros would decide.
    lp.assign(static_cast<size_t>(group) * n, -std::numeric_limits<double>::infinity());
    mu.resize(d);
    cov.resize(static_cast<size_t>(d) * d);
    z.resize(n);
    const double inv_sqrt_d = 1.0 / std::sqrt(static_cast<double>(d));
    for (int g = 0; g < group; ++g) {
      const int head = in.kv_head * group + g;
      stats->mean(in.layer, head, mu.data());
      for (int32_t j = 0; j < n; ++j) {
        const double* uj = u.data() + int64_t{j} * d;
        double dot = 0.0;
        for (int c = 0; c < d; ++c) dot += mu[c] * uj[c];
        z[j] = dot * inv_sqrt_d;
      }
      if (covariance_) {
        stats->covariance(in.layer, head, cov.data());
        // su = u S: [n][d]; z += (su_j . u_j) / (2d).
        su.resize(static_cast<size_t>(n) * d);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, d, 1.0, u.data(), d,
                    cov.data(), d, 0.0, su.data(), d);
        for (int32_t j = 0; j < n; ++j) {
          double q = 0.0;
          for (int c = 0; c < d; ++c) q += su[int64_t{j} * d + c] * u[int64_t{j} * d + c];
          z[j] += q / (2.0 * d);
        }
      }
      // Softmax over the candidates but the sinks (kvpress drops them before
      // its softmax), averaged over the group.
      double mx = -std::numeric_limits<double>::infinity();
      for (int32_t j = 0; j < n; ++j)
        if (in.src[j] >= sinks_) mx = std::max(mx, z[j]);
      if (!std::isfinite(mx)) continue;  // only sinks: they are kept anyway
      double sum = 0.0;
      for (int32_t j = 0; j < n; ++j)
        if (in.src[j] >= sinks_) sum += std::exp(z[j] - mx);
      const double lse = mx + std::log(sum);
      for (int32_t j = 0; j < n; ++j)
        if (in.src[j] >= sinks_) lp[int64_t{g} * n + j] = z[j] - lse;
    }
    const float* values = vnorm_ ? cx.values() : nullptr;
    for (int32_t j = 0; j < n; ++j) {
      // log of the group's mean probability, then + log |v|.
      double m = -std::numeric_limits<double>::infinity();
      for (int g = 0; g < group; ++g) m = std::max(m, lp[int64_t{g} * n + j]);
      double score = m;
      if (std::isfinite(m)) {
        double s = 0.0;
        for (int g = 0; g < group; ++g) s += std::exp(lp[int64_t{g} * n + j] - m);
        score = m + std::log(s / group);
      }
      if (values) {
        double norm = 0.0;
        for (int c = 0; c < d; ++c)
          norm += double{values[int64_t{j} * d + c]} * values[int64_t{j} * d + c];
        score += 0.5 * std::log(norm);
      }
      out[j] = static_cast<float>(score);
    }
    protect_oldest(in, sinks_, out);
    protect_newest(in, window_, out);
  }

 private:
  int future_;
  int32_t sinks_, window_;
  bool covariance_, vnorm_;
};

}  // namespace

ComponentInfo declare_expected() {
  ComponentInfo c = scorer_component<ExpectedScorer>(
      "expected",
      "expected attention (kvpress): the attention future queries, a Gaussian fitted to the "
      "prompt's queries and rotated to the next positions, are expected to pay, times the "
      "value norm; sinks kept",
      scorer_params("once",
                    {{"future", ParamType::Int, "512",
                      "future positions the query rotation is averaged over", 1, 1e6},
                     {"sinks", ParamType::Int, "4",
                      "first tokens always kept, their queries left out of the statistics", 0, 1e6},
                     {"window", ParamType::Int, "0",
                      "last prompt tokens always kept (kvpress compresses the context before the "
                      "question arrives; here the question is the prompt's tail)",
                      0, 1e6},
                     {"covariance",
                      ParamType::Choice,
                      "on",
                      "the queries' covariance term k^T S k / 2d",
                      0,
                      0,
                      {"on", "off"}},
                     {"vnorm",
                      ParamType::Choice,
                      "on",
                      "scores times the value's L2 norm",
                      0,
                      0,
                      {"on", "off"}}}));
  c.units = ScoreUnits::LogProbability;
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "sinks=2,timing=stream";
  return c;
}

}  // namespace kvbench
