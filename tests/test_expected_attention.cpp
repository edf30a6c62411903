// The `expected` scorer (kvpress's expected attention) and the query
// statistics it reads: un-rotated means and covariances, and scores equal to
// the formula computed the long way (explicit averaged rotation matrix).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "model/ops/rope.h"
#include "policies/policy_spec.h"
#include "policies/query_stats.h"
#include "policies/registry.h"
#include "policies/scorer.h"
#include "tests/support/fake_score_context.h"
#include "tests/support/scorer_priorities.h"

namespace kvbench {
namespace {

constexpr int kD = 8, kQHeads = 4, kGroup = 2;

RopeConfig test_rope(bool neox = false, float base = 100.0f) {
  RopeConfig r;
  r.n_dims = 6;  // the last two dimensions pass through
  r.freq_base = base;
  r.neox = neox;
  return r;
}

void rotate(const RopeConfig& rope, float* x, int n_vectors, int64_t pos) {
  const auto inv = rope_inv_freq(rope);
  (rope.neox ? rope_rotate_neox : rope_rotate)(x, n_vectors, kD, pos, inv);
}

std::vector<float> randoms(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

// Queries q_t (pre-RoPE) at positions, rotated as the model hands them over.
std::vector<float> rotated(const std::vector<float>& pre, const std::vector<int32_t>& pos,
                           const RopeConfig& rope = test_rope()) {
  std::vector<float> q = pre;
  for (size_t t = 0; t < pos.size(); ++t)
    rotate(rope, q.data() + t * kQHeads * kD, kQHeads, pos[t]);
  return q;
}

TEST(QueryStats, MeanAndCovarianceOfTheUnrotatedQueries) {
  const std::vector<int32_t> pos = {0, 1, 5, 9, 17, 40};
  const auto pre = randoms(pos.size() * kQHeads * kD, 3);
  QueryStats s(1, kQHeads, kD, /*skip=*/2, test_rope());
  s.begin(0);
  // In two steps: the statistics add up.
  const auto q = rotated(pre, pos);
  s.add(0, q.data(), std::span(pos).first(3));
  s.add(0, q.data() + 3 * kQHeads * kD, std::span(pos).subspan(3));
  ASSERT_EQ(s.count(0), 4);  // positions 0 and 1 are left out
  for (int h = 0; h < kQHeads; ++h) {
    std::vector<double> mean(kD), cov(kD * kD), want_mean(kD, 0.0), want_cov(kD * kD, 0.0);
    s.mean(0, h, mean.data());
    s.covariance(0, h, cov.data());
    for (int t = 2; t < 6; ++t)
      for (int c = 0; c < kD; ++c) want_mean[c] += pre[(t * kQHeads + h) * kD + c] / 4.0;
    for (int t = 2; t < 6; ++t)
      for (int r = 0; r < kD; ++r)
        for (int c = 0; c < kD; ++c)
          want_cov[r * kD + c] += (pre[(t * kQHeads + h) * kD + r] - want_mean[r]) *
                                  (pre[(t * kQHeads + h) * kD + c] - want_mean[c]) / 4.0;
    for (int c = 0; c < kD; ++c) EXPECT_NEAR(mean[c], want_mean[c], 1e-5) << h << " " << c;
    for (int c = 0; c < kD * kD; ++c) EXPECT_NEAR(cov[c], want_cov[c], 1e-5) << h << " " << c;
  }
  s.begin(1);  // another sequence starts afresh
  EXPECT_EQ(s.count(0), 0);
}

// A model with sliding-window layers (gemma3): each layer is un-rotated with
// its own RoPE, here NEOX pairs with base 10 on the local layers and 100 on
// the global one.
TEST(QueryStats, EachLayerIsUnrotatedWithItsOwnRope) {
  const std::vector<int32_t> pos = {3, 8, 21, 60, 61};
  const RopeConfig global = test_rope(true, 100.0f), local = test_rope(true, 10.0f);
  const std::vector<RopeConfig> ropes = {local, global, local};
  QueryStats s(kQHeads, kD, /*skip=*/0, ropes);
  s.begin(0);
  const auto pre = randoms(pos.size() * kQHeads * kD, 9);
  for (int layer = 0; layer < 3; ++layer) {
    const auto q = rotated(pre, pos, ropes[layer]);
    s.add(layer, q.data(), pos);
    for (int h = 0; h < kQHeads; ++h) {
      std::vector<double> mean(kD), want(kD, 0.0);
      s.mean(layer, h, mean.data());
      for (size_t t = 0; t < pos.size(); ++t)
        for (int c = 0; c < kD; ++c) want[c] += pre[(t * kQHeads + h) * kD + c] / pos.size();
      for (int c = 0; c < kD; ++c) EXPECT_NEAR(mean[c], want[c], 1e-5) << layer << " " << h;
    }
  }
  // Un-rotating with the other layer kind's RoPE would not recover them.
  QueryStats wrong(1, kQHeads, kD, 0, global);
  wrong.begin(0);
  const auto q = rotated(pre, pos, local);
  wrong.add(0, q.data(), pos);
  std::vector<double> mean(kD), want(kD, 0.0);
  wrong.mean(0, 0, mean.data());
  double off = 0.0;
  for (size_t t = 0; t < pos.size(); ++t)
    for (int c = 0; c < kD; ++c) want[c] += pre[t * kQHeads * kD + c] / pos.size();
  for (int c = 0; c < kD; ++c) off = std::max(off, std::abs(mean[c] - want[c]));
  EXPECT_GT(off, 0.1);
}

// A head's view for the scorer: keys, values, statistics, RoPE.
test::FakeScoreContext fake_context(std::vector<float> k, std::vector<float> v, const QueryStats& s,
                                    RopeConfig rope = test_rope()) {
  return test::FakeScoreContext(kD, kGroup, std::move(k), std::move(v), std::move(rope), &s);
}

// Both pairings: pair-wise (llama) and NEOX halves (gemma3).
class ExpectedFormula : public testing::TestWithParam<bool> {};

TEST_P(ExpectedFormula, ScoresAreTheExpectedAttentionFormula) {
  const RopeConfig rope = test_rope(GetParam());
  const int n = 12, kv_head = 1, future = 16, sinks = 2;
  const int64_t now = 30;
  // Statistics from 20 queries at positions 2..21.
  std::vector<int32_t> pos(20);
  for (int i = 0; i < 20; ++i) pos[i] = i + 2;
  const auto q = rotated(randoms(pos.size() * kQHeads * kD, 5), pos, rope);
  QueryStats stats(1, kQHeads, kD, sinks, rope);
  stats.begin(0);
  stats.add(0, q.data(), pos);
  const auto keys = randoms(n * kD, 7), values = randoms(n * kD, 8);
  auto cx = fake_context(keys, values, stats, rope);

  std::vector<int32_t> src(n), kpos(n);
  for (int i = 0; i < n; ++i) src[i] = kpos[i] = i;
  ScoreInput in;
  in.layer = 0;
  in.kv_head = kv_head;
  in.n = n;
  in.src = src.data();
  in.pos = kpos.data();
  in.now = now;
  in.keep = 6;
  in.context = &cx;
  for (const char* covariance : {"on", "off"})
    for (const char* vnorm : {"on", "off"}) {
      const std::string text = std::string("expected:budget=6,future=16,sinks=2,covariance=") +
                               covariance + ",vnorm=" + vnorm;
      const PolicySpec spec = parse_policy_spec(text);
      const auto scorer = spec.scorer.info().make_scorer(spec.scorer);
      ASSERT_TRUE(scorer->needs().query_stats);
      EXPECT_EQ(scorer->needs().query_stats_skip, sinks);
      std::vector<float> out(n);
      scorer->priorities(in, out.data());

      // The long way: R = the mean of the rotation matrices at now..now+15.
      std::vector<double> R(kD * kD, 0.0);
      for (int f = 0; f < future; ++f) {
        for (int c = 0; c < kD; ++c) {
          std::vector<float> e(kD, 0.0f);
          e[c] = 1.0f;
          rotate(rope, e.data(), 1, now + f);  // column c of R(now + f)
          for (int r = 0; r < kD; ++r) R[r * kD + c] += e[r] / future;
        }
      }
      std::vector<double> score(n, 0.0);
      for (int g = 0; g < kGroup; ++g) {
        const int head = kv_head * kGroup + g;
        std::vector<double> mu(kD), S(kD * kD), m(kD, 0.0), RS(kD * kD, 0.0), S2(kD * kD, 0.0);
        stats.mean(0, head, mu.data());
        stats.covariance(0, head, S.data());
        for (int r = 0; r < kD; ++r)
          for (int c = 0; c < kD; ++c) m[r] += R[r * kD + c] * mu[c];
        for (int r = 0; r < kD; ++r)
          for (int c = 0; c < kD; ++c)
            for (int x = 0; x < kD; ++x) RS[r * kD + c] += R[r * kD + x] * S[x * kD + c];
        for (int r = 0; r < kD; ++r)
          for (int c = 0; c < kD; ++c)
            for (int x = 0; x < kD; ++x) S2[r * kD + c] += RS[r * kD + x] * R[c * kD + x];
        std::vector<double> z(n, 0.0);
        for (int j = 0; j < n; ++j) {
          const float* k = keys.data() + j * kD;
          for (int c = 0; c < kD; ++c) z[j] += m[c] * k[c] / std::sqrt(double{kD});
          if (std::string(covariance) == "on")
            for (int r = 0; r < kD; ++r)
              for (int c = 0; c < kD; ++c) z[j] += k[r] * S2[r * kD + c] * k[c] / (2.0 * kD);
        }
        // The softmax leaves the sinks out.
        double mx = z[sinks], sum = 0.0;
        for (int j = sinks; j < n; ++j) mx = std::max(mx, z[j]);
        for (int j = 0; j < n; ++j) sum += (z[j] = j < sinks ? 0.0 : std::exp(z[j] - mx));
        for (int j = 0; j < n; ++j) score[j] += z[j] / sum / kGroup;
      }
      for (int j = 0; j < n; ++j) {
        if (std::string(vnorm) == "on") {
          double norm = 0.0;
          for (int c = 0; c < kD; ++c) norm += values[j * kD + c] * values[j * kD + c];
          score[j] *= std::sqrt(norm);
        }
        if (j < sinks) {
          EXPECT_EQ(out[j], Scorer::kKeep) << text << " sink " << j;
        } else {
          // The priority is the log of the score.
          EXPECT_NEAR(out[j], std::log(score[j]), 1e-5) << text << " " << j;
        }
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Pairings, ExpectedFormula, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("Neox") : std::string("PairWise");
                         });

TEST(ExpectedScorer, WithoutQueriesItKeepsTheNewest) {
  QueryStats stats(1, kQHeads, kD, 4, test_rope());
  auto cx = fake_context(randoms(5 * kD, 1), randoms(5 * kD, 2), stats);
  const std::vector<float> out =
      test::scorer_priorities("expected:budget=3,sinks=1", cx, {0, 1, 2, 3, 4}, 3);
  EXPECT_EQ(out[0], Scorer::kKeep);
  for (int i = 1; i < 5; ++i) EXPECT_EQ(out[i], static_cast<float>(i));
}

}  // namespace
}  // namespace kvbench
