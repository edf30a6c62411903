// Attention kernels against the naive materialized reference (attend_naive):
// flash prefill and split-K decode on every instruction-set path this CPU
// runs, f32 and f16 rows, the generic keys()/values() fallback, GQA, gaps in
// positions, masked keys; probabilities reported to an observing cache;
// determinism; the f16 full cache (exact bytes, logits close to f32); the
// bf16 prefill (native against emulated products, every path near exact
// attention).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>

#include "model/evaluator.h"
#include "model/gguf/ggml_types.h"
#include "model/llama_model.h"
#include "model/ops/attention.h"
#include "model/ops/attention_f16.h"
#include "model/ops/attention_kernels.h"
#include "policies/full_cache.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

using test::max_abs_diff;
using test::some_tokens;
using test::supported_paths;

// A one-layer cache whose views are set by hand: any positions per KV head
// (gaps, different token sets per head), rows stored as f32 or f16, exposed
// raw or only through keys()/values(), optionally asking for probabilities.
class HandCache final : public KvCache {
 public:
  HandCache(int n_kv_heads, int n_q_heads, int head_dim, KvElement element, bool raw)
      : element_(element), raw_(raw), heads_(n_kv_heads) {
    shape_ = {1, n_kv_heads, n_q_heads, head_dim};
  }
  // rows: [n][head_dim] f32 values, stored at the cache's precision.
  void set_head(int h, std::vector<int32_t> pos, const std::vector<float>& k,
                const std::vector<float>& v) {
    Head& head = heads_[h];
    head.view.owner = this;
    head.view.pos = std::move(pos);
    head.view.k = store(k);
    head.view.v = store(v);
  }
  const KvShape& shape() const override { return shape_; }
  void begin_step(const StepInfo&) override {}
  void append(int, const float*, const float*) override {}
  const KvHeadView& view(int, int kv_head) override { return heads_[kv_head].view; }
  AttentionRequest attention_request(int) const override { return request; }
  void observe(const AttentionRows& r) override {
    ++observed_calls;
    std::vector<float>& rows = observed[{r.kv_head, r.query_index}];
    rows.clear();
    for (int g = 0; g < r.group; ++g)
      rows.insert(rows.end(), r.probs + g * r.head_stride, r.probs + g * r.head_stride + r.n);
    // A group sum, when given, is exactly the probabilities summed in head order.
    if (r.group_sum) {
      ++group_sums;
      for (int32_t j = 0; j < r.n; ++j) {
        float sum = 0.0f;
        for (int g = 0; g < r.group; ++g) sum += r.probs[g * r.head_stride + j];
        if (r.group_sum[j] != sum) ++group_sum_mismatches;
      }
    }
  }
  void end_step() override {}

  AttentionRequest request;
  int observed_calls = 0;
  int group_sums = 0, group_sum_mismatches = 0;
  std::map<std::pair<int, int32_t>, std::vector<float>> observed;  // (kv_head, query) -> [group][n]

 private:
  std::vector<uint8_t> store(const std::vector<float>& x) const {
    std::vector<uint8_t> b(x.size() * (element_ == KvElement::F32 ? 4 : 2));
    if (element_ == KvElement::F32)
      std::memcpy(b.data(), x.data(), b.size());
    else
      for (size_t i = 0; i < x.size(); ++i)
        reinterpret_cast<uint16_t*>(b.data())[i] = fp32_to_fp16(x[i]);
    return b;
  }
  struct View final : public KvHeadView {
    int32_t size() const override { return static_cast<int32_t>(pos.size()); }
    const int32_t* positions() const override { return pos.data(); }
    const float* keys(int32_t begin, int32_t count, float* scratch) const override {
      return decode(k, begin, count, scratch);
    }
    const float* values(int32_t begin, int32_t count, float* scratch) const override {
      return decode(v, begin, count, scratch);
    }
    std::span<const KvPiece> pieces() const override {
      if (!owner->raw_ || pos.empty()) return {};
      const int64_t stride =
          kv_row_bytes(owner->element_, owner->shape_.head_dim, owner->shape_.head_dim);
      piece.count = size();
      piece.k = {owner->element_, k.data(), stride};
      piece.v = {owner->element_, v.data(), stride};
      return {&piece, 1};
    }
    mutable KvPiece piece;
    const float* decode(const std::vector<uint8_t>& b, int32_t begin, int32_t count,
                        float* out) const {
      const int hd = owner->shape_.head_dim;
      for (int64_t i = 0; i < int64_t{count} * hd; ++i) {
        const int64_t e = int64_t{begin} * hd + i;
        out[i] = owner->element_ == KvElement::F32
                     ? reinterpret_cast<const float*>(b.data())[e]
                     : fp16_to_fp32(reinterpret_cast<const uint16_t*>(b.data())[e]);
      }
      return out;
    }
    const HandCache* owner = nullptr;
    std::vector<int32_t> pos;
    std::vector<uint8_t> k, v;
  };
  struct Head {
    View view;
  };
  KvShape shape_;
  KvElement element_;
  bool raw_;
  std::vector<Head> heads_;
};

struct Case {
  int n_tokens, n_keys, group, n_kv_heads, head_dim;
};

std::vector<float> random_values(size_t n, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> x(n);
  for (auto& v : x) v = u(rng);
  return x;
}

// Key positions: increasing with random gaps; each KV head drops a few keys
// so heads hold different token sets. Queries: positions among and after the
// keys, so some keys are masked for some queries (and a query before every
// key sees nothing).
struct Problem {
  AttentionShape shape;
  std::vector<float> q;
  std::vector<int32_t> qpos;
};

Problem fill(HandCache& cache, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Problem p;
  p.shape = {c.group * c.n_kv_heads, c.n_kv_heads, c.head_dim};
  int32_t last = 0;
  for (int h = 0; h < c.n_kv_heads; ++h) {
    std::vector<int32_t> pos;
    int32_t at = static_cast<int32_t>(rng() % 3);
    const int n = std::max(1, c.n_keys - h);  // heads differ in size
    for (int j = 0; j < n; ++j) {
      pos.push_back(at);
      at += 1 + static_cast<int32_t>(rng() % 3);
    }
    last = std::max(last, pos.back());
    cache.set_head(h, pos, random_values(size_t(n) * c.head_dim, rng, 1.0f),
                   random_values(size_t(n) * c.head_dim, rng, 1.0f));
  }
  // Scores of a few units of magnitude: peaked, not flat, softmax.
  p.q = random_values(size_t(c.n_tokens) * p.shape.n_heads * c.head_dim, rng, 1.5f);
  // Decode: after every key for even seeds, among the keys (a quarter of
  // them masked) for odd ones.
  for (int t = 0; t < c.n_tokens; ++t)
    p.qpos.push_back(c.n_tokens == 1 ? (seed % 2 ? last * 3 / 4 : last)
                                     : static_cast<int32_t>(last * (t + 1) / c.n_tokens));
  return p;
}

std::vector<float> run_attend(const Problem& p, HandCache& cache, CpuPath path, int threads) {
  ThreadPool pool(threads);
  AttentionScratch scratch;
  scratch.path = path;
  std::vector<float> out(p.q.size(), NAN);
  attend(p.shape, 0, p.q.data(), p.qpos, cache, out.data(), pool, scratch);
  return out;
}

std::vector<float> run_naive(const Problem& p, HandCache& cache) {
  std::vector<float> out(p.q.size(), NAN);
  attend_naive(p.shape, 0, p.q.data(), p.qpos, cache, out.data());
  return out;
}

const Case kPrefillCases[] = {
    {2, 1, 3, 1, 16},                       // one key
    {3, 1, 1, 2, 16},    {5, 7, 3, 3, 64},  // SmolLM2's head shape
    {16, 64, 3, 3, 64},                     // exactly one tile of each
    {17, 65, 3, 2, 64},                     // one past a tile
    {40, 130, 4, 2, 32}, {33, 200, 1, 1, 128},
    {70, 150, 2, 3, 24},  // AVX-512 falls back to AVX2 (24 % 16 != 0)
    {21, 90, 3, 1, 20},   // scalar only (20 % 8 != 0)
};

const Case kDecodeCases[] = {
    {1, 1, 3, 3, 64},   {1, 63, 3, 3, 64},    {1, 64, 3, 3, 64},   {1, 65, 3, 2, 64},
    {1, 300, 3, 3, 64}, {1, 1000, 4, 2, 128}, {1, 2500, 3, 3, 64}, {1, 5000, 3, 1, 64},
    {1, 77, 1, 2, 16},  {1, 129, 3, 1, 24},   {1, 90, 2, 1, 20},
};

std::string describe(const Case& c, CpuPath path, KvElement e, bool raw) {
  return "tokens " + std::to_string(c.n_tokens) + " keys " + std::to_string(c.n_keys) + " group " +
         std::to_string(c.group) + " kv_heads " + std::to_string(c.n_kv_heads) + " head_dim " +
         std::to_string(c.head_dim) + " path " + std::string(cpu_path_name(path)) +
         (e == KvElement::F16 ? " f16" : " f32") + (raw ? " raw" : " generic");
}

void expect_matches_naive(const Case& c, uint32_t seed) {
  for (KvElement e : {KvElement::F32, KvElement::F16}) {
    for (bool raw : {true, false}) {
      HandCache cache(c.n_kv_heads, c.n_kv_heads * c.group, c.head_dim, e, raw);
      const Problem p = fill(cache, c, seed);
      const auto ref = run_naive(p, cache);
      for (CpuPath path : supported_paths()) {
        const auto got = run_attend(p, cache, path, 2);
        EXPECT_LE(max_abs_diff(got.data(), ref.data(), ref.size()), 1e-5f)
            << describe(c, path, e, raw);
      }
    }
  }
}

TEST(Attention, FlashPrefillMatchesNaiveMaterializedAttention) {
  uint32_t seed = 1;
  for (const Case& c : kPrefillCases) expect_matches_naive(c, seed++);
}

TEST(Attention, SplitKDecodeMatchesNaiveOnEveryPath) {
  uint32_t seed = 100;
  for (const Case& c : kDecodeCases) expect_matches_naive(c, seed++);
}

TEST(Attention, SimdDecodeMatchesScalarReference) {
  for (const Case& c : kDecodeCases) {
    HandCache cache(c.n_kv_heads, c.n_kv_heads * c.group, c.head_dim, KvElement::F16, true);
    const Problem p = fill(cache, c, 7);
    const auto scalar = run_attend(p, cache, CpuPath::Scalar, 1);
    for (CpuPath path : supported_paths()) {
      const auto got = run_attend(p, cache, path, 2);
      EXPECT_LE(max_abs_diff(got.data(), scalar.data(), scalar.size()), 2e-6f)
          << describe(c, path, KvElement::F16, true);
    }
  }
}

TEST(Attention, QueryThatSeesNoKeyGetsZeros) {
  HandCache cache(1, 2, 16, KvElement::F32, true);
  std::mt19937 rng(3);
  cache.set_head(0, {10, 11, 12}, random_values(48, rng, 1), random_values(48, rng, 1));
  Problem p;
  p.shape = {2, 1, 16};
  p.q = random_values(3 * 2 * 16, rng, 1);
  p.qpos = {5, 10, 12};  // the first query precedes every key
  for (CpuPath path : supported_paths()) {
    const auto out = run_attend(p, cache, path, 2);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], 0.0f);
    EXPECT_LE(max_abs_diff(out.data(), run_naive(p, cache).data(), out.size()), 1e-5f);
    // A decode query before every key as well.
    Problem d = p;
    d.q.resize(32);
    d.qpos = {3};
    const auto o1 = run_attend(d, cache, path, 2);
    for (float x : o1) EXPECT_EQ(x, 0.0f);
  }
}

TEST(Attention, BitIdenticalForTheSameInputsWhateverTheThreads) {
  for (const Case& c : {Case{1, 3000, 3, 3, 64}, Case{37, 300, 3, 3, 64}}) {
    HandCache cache(c.n_kv_heads, c.n_kv_heads * c.group, c.head_dim, KvElement::F16, true);
    const Problem p = fill(cache, c, 11);
    for (CpuPath path : supported_paths()) {
      const auto one = run_attend(p, cache, path, 1);
      for (int threads : {1, 2, 3}) {
        const auto again = run_attend(p, cache, path, threads);
        EXPECT_EQ(0, std::memcmp(one.data(), again.data(), one.size() * 4))
            << describe(c, path, KvElement::F16, true) << " threads " << threads;
      }
    }
  }
}

// Probabilities reported to an observing cache: one call per (KV head,
// requested query), rows summing to 1 and equal to the naive softmax.
void expect_probabilities_match(const Case& c, int32_t last_queries, float softcap = 0.0f) {
  HandCache fast(c.n_kv_heads, c.n_kv_heads * c.group, c.head_dim, KvElement::F32, true);
  HandCache naive(c.n_kv_heads, c.n_kv_heads * c.group, c.head_dim, KvElement::F32, true);
  Problem p = fill(fast, c, 5);
  p.shape.softcap = softcap;
  fill(naive, c, 5);
  fast.request = naive.request = {true, last_queries};
  run_naive(p, naive);
  for (CpuPath path : supported_paths()) {
    fast.observed.clear();
    fast.observed_calls = fast.group_sums = 0;
    run_attend(p, fast, path, 2);
    const int rows = last_queries < 0 ? c.n_tokens : std::min(c.n_tokens, last_queries);
    EXPECT_EQ(fast.observed_calls, rows * c.n_kv_heads) << describe(c, path, KvElement::F32, true);
    if (c.n_tokens == 1)
      EXPECT_EQ(fast.group_sums, c.n_kv_heads) << "decode reports each head's group sum";
    EXPECT_EQ(fast.group_sum_mismatches, 0) << describe(c, path, KvElement::F32, true);
    ASSERT_EQ(fast.observed.size(), naive.observed.size());
    for (const auto& [key, want] : naive.observed) {
      ASSERT_TRUE(fast.observed.count(key)) << "kv_head " << key.first << " query " << key.second;
      const auto& got = fast.observed.at(key);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_LE(max_abs_diff(got.data(), want.data(), want.size()), 1e-6f)
          << describe(c, path, KvElement::F32, true);
      const size_t n = want.size() / c.group;
      for (int g = 0; g < c.group; ++g) {
        const double sum = std::accumulate(got.begin() + g * n, got.begin() + (g + 1) * n, 0.0);
        // A query that sees no key has an all-zero row in both.
        const double want_sum =
            std::accumulate(want.begin() + g * n, want.begin() + (g + 1) * n, 0.0);
        EXPECT_NEAR(sum, want_sum > 0.5 ? 1.0 : 0.0, 1e-5);
      }
    }
  }
}

TEST(Attention, ObservedProbabilitiesSumToOneAndMatchNaiveSoftmax) {
  expect_probabilities_match({20, 90, 3, 2, 64}, -1);  // prefill, every row
  expect_probabilities_match({20, 90, 3, 2, 64}, 4);   // prefill, the last 4 rows only
  expect_probabilities_match({1, 700, 3, 3, 64}, -1);  // decode
  expect_probabilities_match({1, 700, 3, 3, 64}, 1);
  expect_probabilities_match({1, 2500, 3, 2, 64}, -1);  // decode, keys summed in several chunks
}

TEST(Attention, NothingIsObservedUnlessAsked) {
  for (int n_tokens : {1, 9}) {
    HandCache cache(2, 6, 16, KvElement::F32, true);
    const Problem p = fill(cache, {n_tokens, 40, 3, 2, 16}, 9);
    run_attend(p, cache, CpuPath::Scalar, 2);
    cache.request = {true, 0};  // wanted, but zero rows
    run_attend(p, cache, CpuPath::Scalar, 2);
    EXPECT_EQ(cache.observed_calls, 0);
  }
}

// --- Sliding window (Gemma 3's local layers) and the attention scale ---

// A window hides every key a window or more behind the query (attn::visible:
// llama.cpp's SWA mask, masked when query - key >= window).
TEST(Attention, VisibleIsTheSlidingWindowRule) {
  EXPECT_TRUE(attn::visible(10, 10, 0));
  EXPECT_TRUE(attn::visible(0, 10, 0));
  EXPECT_FALSE(attn::visible(11, 10, 0));
  EXPECT_TRUE(attn::visible(10, 10, 3));
  EXPECT_TRUE(attn::visible(8, 10, 3));   // 10 - 8 = 2 < 3
  EXPECT_FALSE(attn::visible(7, 10, 3));  // 10 - 7 = 3
  EXPECT_FALSE(attn::visible(11, 10, 3));
}

// Flash prefill (tiles wholly inside, wholly before and across a window's
// edge) and split-K decode with a window, on every path, against the naive
// reference with the same window.
TEST(Attention, SlidingWindowMatchesNaiveOnEveryPath) {
  uint32_t seed = 300;
  for (const Case& c : {Case{40, 130, 4, 2, 32}, Case{70, 150, 2, 3, 24}, Case{17, 65, 3, 2, 64},
                        Case{1, 300, 3, 3, 64}, Case{1, 2500, 3, 1, 64}, Case{1, 90, 2, 1, 20}}) {
    for (int32_t window : {1, 7, 64, 100}) {
      HandCache cache(c.n_kv_heads, c.n_kv_heads * c.group, c.head_dim, KvElement::F32, true);
      Problem p = fill(cache, c, seed++);
      p.shape.window = window;
      const auto ref = run_naive(p, cache);
      for (CpuPath path : supported_paths()) {
        const auto got = run_attend(p, cache, path, 2);
        EXPECT_LE(max_abs_diff(got.data(), ref.data(), ref.size()), 1e-5f)
            << describe(c, path, KvElement::F32, true) << " window " << window;
      }
    }
  }
}

// Gemma 2's soft-capped scores (cap * tanh(x / cap) before the mask and
// softmax): flash prefill and split-K decode on every path, with and
// without a window, against the naive reference with the same cap; the
// cap changes the output (it bites on these scores).
TEST(Attention, SoftCapMatchesNaiveOnEveryPath) {
  uint32_t seed = 700;
  for (const Case& c : {Case{40, 130, 4, 2, 32}, Case{17, 65, 3, 2, 64}, Case{1, 300, 3, 3, 64},
                        Case{1, 2500, 3, 1, 64}, Case{1, 90, 2, 1, 20}}) {
    for (int32_t window : {0, 7}) {
      for (float cap : {0.5f, 3.0f}) {
        HandCache cache(c.n_kv_heads, c.n_kv_heads * c.group, c.head_dim, KvElement::F32, true);
        Problem p = fill(cache, c, seed++);
        p.shape.window = window;
        const auto plain = run_naive(p, cache);
        p.shape.softcap = cap;
        const auto ref = run_naive(p, cache);
        EXPECT_GT(max_abs_diff(plain.data(), ref.data(), ref.size()), 1e-3f)
            << "cap " << cap << " does not bite";
        for (CpuPath path : supported_paths()) {
          const auto got = run_attend(p, cache, path, 2);
          EXPECT_LE(max_abs_diff(got.data(), ref.data(), ref.size()), 1e-5f)
              << describe(c, path, KvElement::F32, true) << " window " << window << " cap " << cap;
        }
      }
    }
  }
}

// What an observing cache is told (H2O's, TOVA's scores) is the capped
// softmax, in prefill and decode.
TEST(Attention, ObservedProbabilitiesAreTheCappedOnes) {
  expect_probabilities_match({20, 90, 3, 2, 64}, -1, 0.5f);
  expect_probabilities_match({1, 300, 3, 2, 64}, -1, 0.5f);
}

// The windowed naive reference equals plain attention over a cache that
// holds only the keys inside the window: the mask is the window, nothing else.
TEST(Attention, SlidingWindowEqualsAttendingOnlyTheWindowsKeys) {
  std::mt19937 rng(5);
  const int hd = 16, n = 30, window = 6;
  std::vector<int32_t> pos(n);
  std::iota(pos.begin(), pos.end(), 0);
  const auto k = random_values(size_t(n) * hd, rng, 1.0f),
             v = random_values(size_t(n) * hd, rng, 1.0f);
  HandCache all(1, 2, hd, KvElement::F32, true);
  all.set_head(0, pos, k, v);
  Problem p;
  p.shape = {2, 1, hd};
  p.shape.window = window;
  p.q = random_values(2 * hd, rng, 1.5f);
  p.qpos = {20};  // sees 15..20
  HandCache some(1, 2, hd, KvElement::F32, true);
  some.set_head(0, {15, 16, 17, 18, 19, 20},
                std::vector<float>(k.begin() + 15 * hd, k.begin() + 21 * hd),
                std::vector<float>(v.begin() + 15 * hd, v.begin() + 21 * hd));
  Problem plain = p;
  plain.shape.window = 0;
  const auto want = run_naive(plain, some);
  EXPECT_LE(max_abs_diff(run_naive(p, all).data(), want.data(), want.size()), 1e-6f);
  for (CpuPath path : supported_paths())
    EXPECT_LE(max_abs_diff(run_attend(p, all, path, 2).data(), want.data(), want.size()), 1e-5f);
  // Observed probabilities give the keys outside the window (before it, or
  // after the query) zero weight.
  all.request = {true, -1};
  run_attend(p, all, CpuPath::Scalar, 1);
  const auto& rows = all.observed.at({0, 0});
  for (int g = 0; g < 2; ++g)
    for (int j = 0; j < n; ++j)
      if (j < 15 || j > 20)
        EXPECT_EQ(rows[g * n + j], 0.0f) << j;
      else
        EXPECT_GT(rows[g * n + j], 0.0f) << j;
}

// Decode skips key tiles wholly outside a query's window (a sliding-window
// layer's full cache holds its whole past): what they hold cannot reach the
// output, not even NaN, which a zero weight times NaN would have spread. The
// output keeps its bits (checked against the kernel before the skip on 40
// windowed problems, every path and thread count, observed scores included).
TEST(Attention, DecodeSkipsTilesOutsideTheWindow) {
  std::mt19937 rng(11);
  const int hd = 32, n = 1000, window = 64;
  std::vector<int32_t> pos(n);
  std::iota(pos.begin(), pos.end(), 0);
  auto k = random_values(size_t(n) * hd, rng, 1.0f), v = random_values(size_t(n) * hd, rng, 1.0f);
  Problem p;
  p.shape = {2, 1, hd};
  p.shape.window = window;
  p.q = random_values(2 * hd, rng, 1.5f);
  // Sees 936..999. Decode splits the keys into blocks of 256: the last,
  // 768..999, holds two tiles (768..895) wholly before the window.
  p.qpos = {n - 1};
  HandCache clean(1, 2, hd, KvElement::F32, true);
  clean.set_head(0, pos, k, v);
  for (size_t i = 0; i < size_t(896) * hd; ++i) k[i] = v[i] = std::nanf("");
  HandCache poisoned(1, 2, hd, KvElement::F32, true);
  poisoned.set_head(0, pos, k, v);
  for (CpuPath path : supported_paths())
    for (int threads : {1, 2}) {
      const auto want = run_attend(p, clean, path, threads);
      const auto got = run_attend(p, poisoned, path, threads);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << cpu_path_name(path) << " threads " << threads;
    }
}

// A file's own attention scale s gives the attention of queries multiplied by
// s * sqrt(head_dim) under the default 1 / sqrt(head_dim).
TEST(Attention, ExplicitScaleEqualsRescaledQueries) {
  for (const Case& c : {Case{20, 90, 3, 2, 64}, Case{1, 700, 3, 3, 64}}) {
    HandCache cache(c.n_kv_heads, c.n_kv_heads * c.group, c.head_dim, KvElement::F32, true);
    Problem p = fill(cache, c, 21);
    Problem scaled = p;
    const float s = 0.3f;
    p.shape.scale = s;
    for (float& x : scaled.q) x *= s * std::sqrt(static_cast<float>(c.head_dim));
    const auto want = run_naive(scaled, cache);
    EXPECT_LE(max_abs_diff(run_naive(p, cache).data(), want.data(), want.size()), 1e-5f);
    for (CpuPath path : supported_paths())
      EXPECT_LE(max_abs_diff(run_attend(p, cache, path, 2).data(), want.data(), want.size()), 1e-5f)
          << describe(c, path, KvElement::F32, true);
  }
}

// ---- Prefill with bfloat16 products (AttentionShape::bf16) ----

std::vector<float> run_attend_bf16(const Problem& p, HandCache& cache, CpuPath path, int threads,
                                   bool native) {
  ThreadPool pool(threads);
  AttentionScratch scratch;
  scratch.path = path;
  scratch.native_bf16 = native;
  AttentionShape shape = p.shape;
  shape.bf16 = true;
  std::vector<float> out(p.q.size(), NAN);
  attend(shape, 0, p.q.data(), p.qpos, cache, out.data(), pool, scratch);
  return out;
}

bool native_bf16_runs() {
  return cpu_path_supported(CpuPath::Avx512) && attn::avx512_bf16_kernels() != nullptr;
}

// vdpbf16ps and the f32-FMA emulation compute the same sums (they part only
// where a partial sum is subnormal, which these values never produce): bit
// for bit, on every prefill case the AVX-512 path takes, f32 and f16 rows.
TEST(AttentionBf16, NativeProductsEqualTheEmulationBitForBit) {
  if (!native_bf16_runs()) GTEST_SKIP() << "this CPU has no AVX-512 BF16";
  uint32_t seed = 300;
  for (const Case& c : kPrefillCases) {
    for (KvElement e : {KvElement::F32, KvElement::F16}) {
      HandCache cache(c.n_kv_heads, c.n_kv_heads * c.group, c.head_dim, e, true);
      const Problem p = fill(cache, c, seed++);
      const auto emulated = run_attend_bf16(p, cache, CpuPath::Avx512, 2, false);
      const auto native = run_attend_bf16(p, cache, CpuPath::Avx512, 2, true);
      EXPECT_EQ(0, std::memcmp(emulated.data(), native.data(), native.size() * 4))
          << describe(c, CpuPath::Avx512, e, true) << " max diff "
          << max_abs_diff(emulated.data(), native.data(), native.size());
    }
  }
}

// Every path (scalar reference, AVX2, AVX-512 emulated and native) stays
// within bfloat16's rounding of exact attention, and near the scalar
// reference; a pair-order or layout mistake moves outputs by far more.
TEST(AttentionBf16, EveryPathStaysNearExactAttention) {
  uint32_t seed = 400;
  float worst_exact = 0.0f, worst_scalar = 0.0f;
  for (const Case& c : kPrefillCases) {
    for (KvElement e : {KvElement::F32, KvElement::F16}) {
      HandCache cache(c.n_kv_heads, c.n_kv_heads * c.group, c.head_dim, e, true);
      const Problem p = fill(cache, c, seed++);
      const auto exact = run_naive(p, cache);
      const auto scalar = run_attend_bf16(p, cache, CpuPath::Scalar, 1, false);
      for (CpuPath path : supported_paths()) {
        for (bool native : {false, true}) {
          const auto got = run_attend_bf16(p, cache, path, 2, native);
          const float de = max_abs_diff(got.data(), exact.data(), exact.size());
          const float ds = max_abs_diff(got.data(), scalar.data(), scalar.size());
          worst_exact = std::max(worst_exact, de);
          worst_scalar = std::max(worst_scalar, ds);
          EXPECT_LE(de, 2e-2f) << describe(c, path, e, true) << " native " << native;
          EXPECT_LE(ds, 4e-3f) << describe(c, path, e, true) << " native " << native;
        }
      }
    }
  }
  std::printf("bf16 prefill: worst |out - exact| %.3g, worst |out - scalar bf16| %.3g\n",
              worst_exact, worst_scalar);
}

// With soft-capped scores too: every path's bf16 prefill stays near exact
// capped attention.
TEST(AttentionBf16, SoftCapStaysNearExactAttention) {
  uint32_t seed = 800;
  for (const Case& c : kPrefillCases) {
    HandCache cache(c.n_kv_heads, c.n_kv_heads * c.group, c.head_dim, KvElement::F32, true);
    Problem p = fill(cache, c, seed++);
    p.shape.softcap = 0.5f;
    const auto exact = run_naive(p, cache);
    for (CpuPath path : supported_paths())
      for (bool native : {false, true}) {
        const auto got = run_attend_bf16(p, cache, path, 2, native);
        EXPECT_LE(max_abs_diff(got.data(), exact.data(), exact.size()), 2e-2f)
            << describe(c, path, KvElement::F32, true) << " native " << native;
      }
  }
}

TEST(AttentionBf16, BitIdenticalWhateverTheThreads) {
  const Case c{37, 300, 3, 3, 64};
  HandCache cache(c.n_kv_heads, c.n_kv_heads * c.group, c.head_dim, KvElement::F16, true);
  const Problem p = fill(cache, c, 12);
  for (CpuPath path : supported_paths()) {
    for (bool native : {false, true}) {
      const auto one = run_attend_bf16(p, cache, path, 1, native);
      for (int threads : {2, 3}) {
        const auto again = run_attend_bf16(p, cache, path, threads, native);
        EXPECT_EQ(0, std::memcmp(one.data(), again.data(), one.size() * 4))
            << describe(c, path, KvElement::F16, true) << " threads " << threads;
      }
    }
  }
}

TEST(AttentionBf16, RoundingIsToNearestEvenWithSubnormalsToZero) {
  auto bits = [](float x) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
  };
  EXPECT_EQ(attn::bf16_round(1.0f), 1.0f);
  EXPECT_EQ(attn::bf16_round(1.0f + 0x1p-8f), 1.0f);            // tie: to the even 1.0
  EXPECT_EQ(attn::bf16_round(1.0f + 0x3p-8f), 1.0f + 0x1p-6f);  // tie: to the even 1 + 2^-6
  EXPECT_EQ(attn::bf16_round(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);  // above the tie
  EXPECT_EQ(attn::bf16_round(-3.14159265f), -3.140625f);
  EXPECT_EQ(bits(attn::bf16_round(1e-39f)), 0u);            // subnormal: +0
  EXPECT_EQ(bits(attn::bf16_round(-1e-39f)), 0x80000000u);  // -0
  EXPECT_EQ(attn::bf16_round(0x1p-126f), 0x1p-126f);        // smallest normal kept
}

// Each table's pack_keys_bf16 rounds like the scalar reference: the
// emulation's layout (pairs swapped) holds exactly bf16_round of each key.
TEST(AttentionBf16, PackedKeysAreTheRoundedKeys) {
  const int hd = 64;
  const int32_t n = 50;
  std::mt19937 rng(21);
  std::vector<float> k = random_values(size_t(n) * hd, rng, 3.0f);
  k[5] = 1e-39f;          // a subnormal
  k[6] = 1.0f + 0x1p-8f;  // a tie
  attn::Rows rows{KvElement::F32, reinterpret_cast<const uint8_t*>(k.data()), hd * 4};
  rows.n = n;
  std::vector<const attn::Kernels*> tables = {attn::scalar_kernels(), attn::avx2_kernels(),
                                              attn::avx512_kernels()};
  for (size_t t = 0; t < tables.size(); ++t) {
    if (!tables[t] || (t == 1 && !cpu_path_supported(CpuPath::Avx2)) ||
        (t == 2 && !cpu_path_supported(CpuPath::Avx512)))
      continue;
    std::vector<float> kt(size_t(hd) * attn::kKeyTile, NAN);
    tables[t]->pack_keys_bf16(rows, hd, 0, n, kt.data());
    for (int32_t j = 0; j < attn::kKeyTile; ++j)
      for (int d = 0; d < hd; ++d) {
        const float want = j < n ? attn::bf16_round(k[size_t(j) * hd + d]) : 0.0f;
        ASSERT_EQ(0, std::memcmp(&want, &kt[size_t(d ^ 1) * attn::kKeyTile + j], 4))
            << "table " << t << " key " << j << " element " << d;
      }
  }
}

TEST(AttentionF16, F16cConversionMatchesScalarReferenceBitForBit) {
  std::mt19937 rng(1);
  std::vector<float> x = {0.0f,    -0.0f,    1.0f,     -1.0f,  65504.0f,  65520.0f, 1e9f,     -1e9f,
                          6.1e-5f, 5.96e-8f, 2.98e-8f, 1e-10f, 0.333333f, INFINITY, -INFINITY};
  std::uniform_real_distribution<float> e(-30.0f, 17.0f);
  for (int i = 0; i < 20000; ++i) x.push_back((rng() & 1 ? -1.0f : 1.0f) * std::exp2(e(rng)));
  std::vector<uint16_t> h(x.size());
  f32_to_f16_row(x.data(), h.data(), static_cast<int64_t>(x.size()));
  std::vector<float> back(x.size());
  f16_to_f32_row(h.data(), back.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(h[i], fp32_to_fp16(x[i])) << x[i];
    const float want = fp16_to_fp32(h[i]);
    ASSERT_EQ(std::memcmp(&back[i], &want, 4), 0) << x[i];
  }
}

// --- The full cache in f16 ---

TEST(FullCacheF16, BytesAreExactAndTruncateKeepsAPrefix) {
  auto model = LlamaModel::load(test::tiny_model_path());
  const auto& c = model->config();
  Evaluator eval(*model, 2, MatmulMode::Exact);
  for (KvElement e : {KvElement::F32, KvElement::F16}) {
    FullCache cache(model->kv_shape(), e);
    const auto tokens = some_tokens(13, c.n_vocab, 2);
    std::vector<int32_t> pos(13);
    std::iota(pos.begin(), pos.end(), 0);
    eval.step(tokens, pos, 0, StepPhase::Prefill, cache, Logits::None, nullptr);
    const uint64_t per_token =
        uint64_t(c.n_layers) * c.n_kv_heads * 2 * kv_row_bytes(e, c.head_dim, c.head_dim);
    EXPECT_EQ(cache.kv_bytes(), per_token * 13);
    cache.truncate(5);
    EXPECT_EQ(cache.n_tokens(), 5);
    EXPECT_EQ(cache.kv_bytes(), per_token * 5);
  }
}

// f16 K/V move the tiny model's logits by rounding only (11-bit mantissa,
// relative 4.9e-4): measured max |f16 - f32| over 40 positions, prefill and
// 16 decode steps, 0.042 on a logit range of 78 (random weights make large
// K/V). Bound: 1e-3 of the logit range.
TEST(FullCacheF16, TinyModelLogitsStayCloseToF32Cache) {
  auto model = LlamaModel::load(test::tiny_model_path());
  const int nv = model->config().n_vocab;
  const auto tokens = some_tokens(40, nv, 7);
  std::vector<int32_t> pos(40);
  std::iota(pos.begin(), pos.end(), 0);
  float worst = 0.0f, spread = 0.0f;
  std::vector<float> logits32(40 * nv), logits16(40 * nv);
  Evaluator eval(*model, 2, MatmulMode::Exact);
  FullCache c32(model->kv_shape(), KvElement::F32), c16(model->kv_shape(), KvElement::F16);
  eval.step(tokens, pos, 0, StepPhase::Prefill, c32, Logits::All, logits32.data());
  eval.step(tokens, pos, 0, StepPhase::Prefill, c16, Logits::All, logits16.data());
  worst = max_abs_diff(logits32.data(), logits16.data(), logits32.size());
  const auto [lo, hi] = std::minmax_element(logits32.begin(), logits32.end());
  spread = *hi - *lo;
  for (int step = 0; step < 16; ++step) {
    const int32_t tok = tokens[step], p = 40 + step;
    eval.step(std::span(&tok, 1), std::span(&p, 1), 0, StepPhase::Decode, c32, Logits::Last,
              logits32.data());
    eval.step(std::span(&tok, 1), std::span(&p, 1), 0, StepPhase::Decode, c16, Logits::Last,
              logits16.data());
    worst = std::max(worst, max_abs_diff(logits32.data(), logits16.data(), nv));
  }
  std::printf("tiny model: max |logit(f16 KV) - logit(f32 KV)| = %.3g (logit range %.3g)\n", worst,
              spread);
  RecordProperty("max_abs_logit_diff_f16_kv", std::to_string(worst));
  EXPECT_GT(worst, 0.0f);  // f16 storage really is in use
  EXPECT_LE(worst, 1e-3f * spread);
}

}  // namespace
}  // namespace kvbench

namespace kvbench {
namespace {

// SmolLM2 (skipped when models/ lacks it): f16 K/V against f32 K/V on a
// 256-token text, every position's logits, plus 16 greedy decode steps.
// Measured: max |diff| 0.021, top-1 identical at all 272 positions.
TEST(FullCacheF16, SmolLM2LogitsStayCloseToF32Cache) {
  const std::string path = test::smollm2_path();
  if (path.empty())
    GTEST_SKIP() << "SmolLM2 not found: run scripts/setup.sh (or set KVBENCH_MODEL)";
  auto model = LlamaModel::load(path);
  const int nv = model->config().n_vocab;
  std::string text;
  for (int i = 0; i < 12; ++i)
    text +=
        "Paragraph " + std::to_string(i) +
        ": the committee reviewed the budget, the schedule and the risks of the bridge project, "
        "and asked the engineers to report again before the winter. ";
  auto tokens = model->tokenizer().encode(text, false, false);
  ASSERT_GE(tokens.size(), 256u);
  tokens.resize(256);
  std::vector<int32_t> pos(tokens.size());
  std::iota(pos.begin(), pos.end(), 0);
  Evaluator eval(*model, 2, MatmulMode::Exact);
  FullCache c32(model->kv_shape(), KvElement::F32), c16(model->kv_shape(), KvElement::F16);
  std::vector<float> l32(tokens.size() * nv), l16(tokens.size() * nv);
  eval.step(tokens, pos, 0, StepPhase::Prefill, c32, Logits::All, l32.data());
  eval.step(tokens, pos, 0, StepPhase::Prefill, c16, Logits::All, l16.data());
  float worst = max_abs_diff(l32.data(), l16.data(), l32.size());
  int top1_same = 0, n = 0;
  auto top1 = [&](const float* l) { return std::max_element(l, l + nv) - l; };
  for (size_t t = 0; t < tokens.size(); ++t, ++n)
    top1_same += top1(&l32[t * nv]) == top1(&l16[t * nv]);
  int32_t next = static_cast<int32_t>(top1(&l32[(tokens.size() - 1) * nv]));
  for (int step = 0; step < 16; ++step, ++n) {
    const int32_t p = static_cast<int32_t>(tokens.size()) + step;
    eval.step(std::span(&next, 1), std::span(&p, 1), 0, StepPhase::Decode, c32, Logits::Last,
              l32.data());
    eval.step(std::span(&next, 1), std::span(&p, 1), 0, StepPhase::Decode, c16, Logits::Last,
              l16.data());
    worst = std::max(worst, max_abs_diff(l32.data(), l16.data(), nv));
    top1_same += top1(l32.data()) == top1(l16.data());
    next = static_cast<int32_t>(top1(l32.data()));
  }
  std::printf(
      "SmolLM2: max |logit(f16 KV) - logit(f32 KV)| = %.3g over %d positions, top-1 same on %d\n",
      worst, n, top1_same);
  RecordProperty("smollm2_max_abs_logit_diff_f16_kv", std::to_string(worst));
  EXPECT_GT(worst, 0.0f);
  EXPECT_LE(worst, 0.1f);
  EXPECT_GE(top1_same, n - 2);  // a near-tie may flip
}

}  // namespace
}  // namespace kvbench
