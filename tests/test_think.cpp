// ThinK (policies/parts/think.cpp, `+think`): at the end of the prompt each
// KV head's int(head_dim x channels) key channels of lowest qs_c x ks_c
// become 0 in the prompt's kept keys; values, other channels and later keys
// stay as they were. Checked against the long way on random data.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "policies/policy_cache.h"
#include "tests/support/cache_step.h"
#include "tests/support/random_kvq.h"

namespace kvbench {
namespace {

constexpr int kLayers = 2, kKv = 2, kQ = 4, kDim = 8, kTokens = 21, kGroup = kQ / kKv;

// Keys with channels of different scales, so the ranking is not a coin toss.
struct Data : test::RandomKvq {
  Data()
      : RandomKvq({kLayers, kKv, kQ, kDim}, kTokens, 3, 1.0f,
                  [](size_t i) { return 1.0f + (i % kDim); }) {}
};

void step(PolicyCache& cache, const Data& d, int begin, int end, StepPhase phase) {
  const auto begun = test::begin_test_step(cache, begin, end - begin, phase);
  for (int l = 0; l < kLayers; ++l) {
    cache.observe_queries(l, d.q[l].data() + begin * kQ * kDim, begun.pos);
    cache.append(l, d.k[l].data() + begin * kKv * kDim, d.v[l].data() + begin * kKv * kDim);
    for (int h = 0; h < kKv; ++h) cache.view(l, h);
  }
  cache.end_step();
}

std::unique_ptr<PolicyCache> prefilled(const std::string& spec, const Data& d, int prompt) {
  auto cache = PolicyCache::create(parse_policy_spec(spec),
                                   test::test_cache_context({kLayers, kKv, kQ, kDim}, prompt));
  step(*cache, d, 0, prompt, StepPhase::Prefill);
  cache->end_prefill();
  return cache;
}

// The long way: the channels pruned in head (l, h), given the entries kept
// and the last `window` prompt queries.
std::set<int> pruned(const Data& d, int l, int h, const std::vector<int64_t>& kept, int window,
                     int prompt, int count) {
  std::vector<std::pair<double, int>> score;
  for (int c = 0; c < kDim; ++c) {
    double qs = 0.0, ks = 0.0;
    for (int t = prompt - window; t < prompt; ++t)
      for (int g = 0; g < kGroup; ++g) {
        const double x = d.q[l][(t * kQ + h * kGroup + g) * kDim + c];
        qs += x * x / (window * kGroup);
      }
    for (int64_t t : kept) ks += double{d.key(l, static_cast<int>(t), h)[c]} * d.key(l, t, h)[c];
    score.emplace_back(qs * ks / kept.size(), c);
  }
  std::stable_sort(score.begin(), score.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::set<int> out;
  for (int r = 0; r < count; ++r) out.insert(score[r].second);
  return out;
}

// Every held entry of the head: its key is the original with exactly the
// channels `zero` at 0 (tokens < prompt) or untouched, its value untouched.
void expect_keys(const PolicyCache& cache, const Data& d, int l, int h, const std::set<int>& zero,
                 int prompt) {
  float k[kDim], v[kDim];
  for (int64_t t : cache.held_sources(l, h)) {
    ASSERT_TRUE(cache.store().find(l, h, static_cast<int32_t>(t), k, v));
    for (int c = 0; c < kDim; ++c) {
      const bool z = t < prompt && zero.count(c);
      EXPECT_EQ(k[c], z ? 0.0f : d.key(l, static_cast<int>(t), h)[c])
          << "layer " << l << " head " << h << " token " << t << " channel " << c;
      EXPECT_EQ(v[c], d.v[l][(t * kKv + h) * kDim + c]);
    }
  }
}

TEST(Think, ZerosTheLowestEnergyChannelsOfThePromptsKeys) {
  const Data d;
  for (const auto& [share, window] : {std::pair{0.5, 4}, {0.25, 7}, {0.75, 1}}) {
    SCOPED_TRACE(testing::Message() << "channels " << share << " window " << window);
    auto cache = prefilled(
        "full+think:channels=" + std::to_string(share) + ",window=" + std::to_string(window), d,
        kTokens);
    std::vector<int64_t> all(kTokens);
    std::iota(all.begin(), all.end(), 0);
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKv; ++h) {
        const auto zero = pruned(d, l, h, all, window, kTokens, static_cast<int>(kDim * share));
        EXPECT_EQ(zero.size(), static_cast<size_t>(kDim * share));
        expect_keys(*cache, d, l, h, zero, kTokens);
      }
  }
}

TEST(Think, AfterSnapKvScoresTheKeptKeysOnly) {
  const Data d;
  auto cache = prefilled("snapkv:budget=9,window=4,kernel=3+think:window=4", d, kTokens);
  int differ = 0;
  std::vector<int64_t> all(kTokens);
  std::iota(all.begin(), all.end(), 0);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      const auto kept = cache->held_sources(l, h);
      ASSERT_EQ(kept.size(), 9u);
      const auto zero = pruned(d, l, h, kept, 4, kTokens, kDim / 2);
      expect_keys(*cache, d, l, h, zero, kTokens);
      differ += zero != pruned(d, l, h, all, 4, kTokens, kDim / 2);
    }
  EXPECT_GT(differ, 0);  // the kept keys' energy is not every key's
}

TEST(Think, LaterKeysKeepEveryChannel) {
  const Data d;
  const int prompt = kTokens - 3;
  auto cache = prefilled("full+think", d, prompt);
  for (int t = prompt; t < kTokens; ++t) step(*cache, d, t, t + 1, StepPhase::Decode);
  std::vector<int64_t> all(prompt);
  std::iota(all.begin(), all.end(), 0);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      ASSERT_EQ(cache->held_sources(l, h).size(), static_cast<size_t>(kTokens));
      expect_keys(*cache, d, l, h, pruned(d, l, h, all, prompt, prompt, kDim / 2), prompt);
    }
}

TEST(Think, HalfPrecisionKeysGetExactZeros) {
  const Data d;
  auto cache = prefilled("full+f16+think", d, kTokens);
  float k[kDim], v[kDim];
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      int zeros = 0;
      for (int c = 0; c < kDim; ++c) {
        ASSERT_TRUE(cache->store().find(l, h, 5, k, v));
        zeros += k[c] == 0.0f;
      }
      EXPECT_EQ(zeros, kDim / 2);
    }
  EXPECT_THROW(parse_policy_spec("full+kivi2+think"), InputError);
}

}  // namespace
}  // namespace kvbench
