// ChunkKV (policies/parts/chunkkv.cpp, `+chunkkv`): a layer keeps whole chunks,
// the same in every head, chosen by the mean over a chunk of its tokens'
// priorities summed over the heads; k = int(chunks x b) chunks for a ratio
// budget b, whatever their token count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "policies/policy_cache.h"
#include "tests/support/cache_step.h"

namespace kvbench {
namespace {

constexpr int kLayers = 2, kKv = 2, kQ = 4, kDim = 8, kTokens = 23;

// Key norms by token and head (knorm keeps low norms: priority -norm).
float norm_of(int l, int h, int t) { return 1.0f + static_cast<float>((t * 7 + h * 3 + l) % 11); }

std::unique_ptr<PolicyCache> prefilled(const std::string& spec) {
  auto cache = PolicyCache::create(parse_policy_spec(spec),
                                   test::test_cache_context({kLayers, kKv, kQ, kDim}, kTokens));
  const auto begun = test::begin_test_step(*cache, 0, kTokens);
  for (int l = 0; l < kLayers; ++l) {
    std::vector<float> k(kTokens * kKv * kDim, 0.0f), v(k.size(), 0.5f);
    for (int t = 0; t < kTokens; ++t)
      for (int h = 0; h < kKv; ++h) k[(t * kKv + h) * kDim] = norm_of(l, h, t);  // |k| = that
    cache->append(l, k.data(), v.data());
    for (int h = 0; h < kKv; ++h) cache->view(l, h);
  }
  cache->end_step();
  cache->end_prefill();
  return cache;
}

// The long way: the chunks' scores, the tokens of the top k (ties: the
// later chunk).
std::vector<int64_t> top_chunks(int l, int k, int length) {
  const int chunks = (kTokens + length - 1) / length;
  std::vector<std::pair<double, int>> score;
  for (int c = 0; c < chunks; ++c) {
    double sum = 0.0;
    int n = 0;
    for (int t = c * length; t < std::min(kTokens, (c + 1) * length); ++t, ++n)
      for (int h = 0; h < kKv; ++h) sum -= norm_of(l, h, t);
    score.emplace_back(sum / n, c);
  }
  std::sort(score.begin(), score.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second > y.second;
  });
  std::vector<int64_t> tokens;
  for (int r = 0; r < k; ++r)
    for (int t = score[r].second * length; t < std::min(kTokens, (score[r].second + 1) * length);
         ++t)
      tokens.push_back(t);
  std::sort(tokens.begin(), tokens.end());
  return tokens;
}

TEST(ChunkKv, ALayerKeepsTheWholeChunksOfHighestMeanSummedPriority) {
  const int chunks = (kTokens + 4) / 5;  // 4 of 5 tokens, one of 3
  for (const double b : {0.25, 0.5, 0.75}) {
    SCOPED_TRACE(b);
    auto cache = prefilled("knorm:budget=" + std::to_string(b) + ",timing=once+chunkkv:length=5");
    const int k = std::max(1, static_cast<int>(chunks * b));  // kvpress's int(nc (1 - r))
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKv; ++h) EXPECT_EQ(cache->held_sources(l, h), top_chunks(l, k, 5));
  }
}

TEST(ChunkKv, ATokenBudgetKeepsTheWholeChunksItHolds) {
  // 12 tokens of budget: two chunks of up to 5 tokens.
  auto cache = prefilled("knorm:budget=12,timing=once+chunkkv:length=5");
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) EXPECT_EQ(cache->held_sources(l, h), top_chunks(l, 2, 5));
}

TEST(ChunkKv, OnlyWithTheUniformAllocator) {
  for (const char* spec : {"snapkv+adakv+chunkkv", "h2o+pyramid+chunkkv"}) {
    try {
      parse_policy_spec(spec);
      ADD_FAILURE() << spec << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("chunkkv"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kvbench
