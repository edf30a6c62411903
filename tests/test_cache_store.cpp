// The cache store: row codecs (exact half conversions, analytic round-trip
// bounds, packed sizes), exact memory accounting, sequence-operation errors,
// the cold tier (Quest-bound restore, bit-identical rows, RAM and file),
// the merged summary entry, KIVI's quantization schedule.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "policies/cache_errors.h"
#include "policies/codec.h"
#include "policies/policy_cache.h"
#include "tests/support/cache_step.h"

namespace kvbench {
namespace {

float f(uint32_t bits) { return std::bit_cast<float>(bits); }

TEST(Codec, HalfConversionIsExactAndRoundsToNearestEven) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds up to infinity
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -26)), 0x0000);         // below half the smallest subnormal
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);             // subnormal tie -> even
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN
    ASSERT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 100.0f);
  for (int i = 0; i < 100000; ++i) {
    const float x = nd(rng) * (i % 7 == 0 ? 1e-6f : 1.0f);
    const float up = f16_to_f32(f32_to_f16_up(x)), down = f16_to_f32(f32_to_f16_down(x));
    ASSERT_LE(down, x);
    ASSERT_GE(up, x);
    ASSERT_LE(std::fabs(f16_to_f32(f32_to_f16(x)) - x), std::fabs(x) * 0x1.0p-11f + 0x1.0p-25f);
  }
}

TEST(Codec, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(f(0x3f808000)), 0x3f80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(f(0x3f818000)), 0x3f82);  // tie -> even
  EXPECT_EQ(f32_to_bf16(f(0x3f808001)), 0x3f81);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue;
    ASSERT_EQ(f32_to_bf16(bf16_to_f32(static_cast<uint16_t>(h))), h);
  }
}

TEST(Codec, PackedSizesPerRow) {
  EXPECT_EQ(RowCodec(CodecKind::F32, 64, 64).row_bytes(), 256);
  EXPECT_EQ(RowCodec(CodecKind::F16, 64, 64).row_bytes(), 128);
  EXPECT_EQ(RowCodec(CodecKind::BF16, 64, 64).row_bytes(), 128);
  // int8: 64 codes + 2 f16 scales; int4: 32 bytes of codes + 2 x (min, step);
  // int2: 16 bytes + 2 x (min, step).
  EXPECT_EQ(RowCodec(CodecKind::Int8, 64, 32).data_bytes(), 64);
  EXPECT_EQ(RowCodec(CodecKind::Int8, 64, 32).param_bytes(), 4);
  EXPECT_EQ(RowCodec(CodecKind::Int4, 64, 32).data_bytes(), 32);
  EXPECT_EQ(RowCodec(CodecKind::Int4, 64, 32).param_bytes(), 8);
  EXPECT_EQ(RowCodec(CodecKind::Int2, 64, 32).data_bytes(), 16);
  EXPECT_EQ(RowCodec(CodecKind::Int2, 64, 32).param_bytes(), 8);
}

TEST(Codec, RoundTripsWithinTheirAnalyticBound) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int dim = 64;
  std::vector<float> x(dim), y(dim);
  for (CodecKind kind : {CodecKind::F32, CodecKind::F16, CodecKind::BF16, CodecKind::Int8,
                         CodecKind::Int4, CodecKind::Int2}) {
    for (int group : {8, 32, 64}) {
      const RowCodec c(kind, dim, group);
      std::vector<uint8_t> bytes(c.row_bytes());
      float worst_ratio = 0.0f;
      for (int trial = 0; trial < 3000; ++trial) {
        // Within f16's range (|x| <= 65504) even with the outlier below.
        const float scale = std::ldexp(1.0f, trial % 17 - 10);
        for (auto& v : x) v = nd(rng) * scale;
        if (trial % 5 == 0) x[trial % dim] *= 50.0f;                // an outlier
        if (trial % 11 == 0) std::fill(x.begin(), x.end(), 0.37f);  // a constant row
        if (trial % 13 == 0) std::fill(x.begin(), x.end(), 0.0f);
        c.encode(x.data(), bytes.data());
        c.decode(bytes.data(), y.data());
        const float bound = c.error_bound(x.data());
        for (int i = 0; i < dim; ++i) {
          const float err = std::fabs(x[i] - y[i]);
          ASSERT_LE(err, bound) << codec_name(kind) << " group " << group << " trial " << trial;
          if (bound > 0) worst_ratio = std::max(worst_ratio, err / bound);
        }
        if (kind == CodecKind::F32) ASSERT_EQ(0, std::memcmp(x.data(), y.data(), 4 * dim));
      }
      // The bound is tight, not vacuous: errors reach a good part of it.
      if (kind != CodecKind::F32) EXPECT_GT(worst_ratio, 0.4f) << codec_name(kind);
    }
  }
}

TEST(Codec, KiviKeysPerChannelWithinHalfAStep) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int n = 32, dim = 16;
  std::vector<float> keys(n * dim), out(dim);
  for (int t = 0; t < n; ++t)
    for (int c = 0; c < dim; ++c)
      keys[t * dim + c] = nd(rng) * (c == 3 ? 40.0f : 1.0f);  // outlier channel
  std::vector<uint16_t> params(2 * dim);
  std::vector<uint8_t> codes(n * dim / 4);
  kivi_encode_key_block(keys.data(), n, dim, params.data(), codes.data());
  for (int c = 0; c < dim; ++c) {
    float mn = 1e30f, mx = -1e30f;
    for (int t = 0; t < n; ++t)
      mn = std::min(mn, keys[t * dim + c]), mx = std::max(mx, keys[t * dim + c]);
    // The step is the channel's own range / 3 (f16-rounded up): an outlier
    // channel does not widen the others' steps.
    EXPECT_NEAR(2 * kivi_key_error_bound(params.data(), dim, c), (mx - mn) / 3, (mx - mn) * 2e-3f)
        << c;
  }
  for (int t = 0; t < n; ++t) {
    kivi_decode_key(codes.data() + t * dim / 4, params.data(), dim, out.data());
    for (int c = 0; c < dim; ++c)
      ASSERT_LE(std::fabs(out[c] - keys[t * dim + c]),
                kivi_key_error_bound(params.data(), dim, c) * (1 + 1e-5f) + 1e-6f);
  }
}

// --- the store through the cache interface, without a model ---

constexpr int kLayers = 3, kKv = 2, kQ = 4, kDim = 16;

CacheContext ctx(int64_t tokens = 1000) {
  return test::test_cache_context({kLayers, kKv, kQ, kDim}, tokens);
}

// K row of stream token t, head h, layer l: a deterministic pattern.
float kval(int l, int h, int t, int c) {
  return std::sin(0.37f * t + 1.3f * c + 0.7f * h + 2.1f * l) * (1 + c % 3);
}
float vval(int l, int h, int t, int c) {
  return std::cos(0.23f * t + 0.9f * c + 0.5f * h + 1.7f * l);
}

// Appends tokens [src0, src0 + n) at positions [pos0, pos0 + n) to `seq`,
// with no attention observed (the policies here do not need it).
void append(PolicyCache& cache, int seq, int32_t src0, int32_t pos0, int n, bool decode = false,
            const std::function<float(int, int, int, int)>& kf = kval) {
  const auto begun =
      test::begin_test_step(cache, pos0, n, decode ? StepPhase::Decode : StepPhase::Prefill, seq);
  std::vector<float> k(n * kKv * kDim), v(k.size()), q(n * kQ * kDim, 0.1f);
  for (int l = 0; l < kLayers; ++l) {
    for (int t = 0; t < n; ++t)
      for (int h = 0; h < kKv; ++h)
        for (int c = 0; c < kDim; ++c) {
          k[(t * kKv + h) * kDim + c] = kf(l, h, src0 + t, c);
          v[(t * kKv + h) * kDim + c] = vval(l, h, src0 + t, c);
        }
    cache.append(l, k.data(), v.data());
    if (cache.attention_request(l).queries) cache.observe_queries(l, q.data(), begun.pos);
    for (int h = 0; h < kKv; ++h) cache.view(l, h);
  }
  cache.end_step();
}

TEST(CacheStore, FullCacheBytesFollowTheFormulaExactly) {
  for (const char* spec : {"full", "full+f16", "full+bf16"}) {
    auto cache = PolicyCache::create(parse_policy_spec(spec), ctx());
    append(*cache, 0, 0, 0, 37);
    append(*cache, 0, 37, 37, 1, true);
    const uint64_t elem = std::string(spec) == "full" ? 4 : 2;
    const MemoryReport m = cache->memory();
    EXPECT_EQ(m.hot.kv, uint64_t{kLayers} * kKv * kDim * 38 * 2 * elem) << spec;
    EXPECT_EQ(m.hot.scales, 0u);
    EXPECT_EQ(m.hot.meta, uint64_t{kLayers} * kKv * 38 * kEntryMetaBytes);
    EXPECT_EQ(m.hot.entries, uint64_t{kLayers} * kKv * 38);
    EXPECT_EQ(m.cold.total(), 0u);
    EXPECT_EQ(m.hot_layers.size(), static_cast<size_t>(kLayers));
    EXPECT_EQ(m.hot_layers[1].kv, m.hot.kv / kLayers);
  }
}

TEST(CacheStore, QuantizedBytesAreRealPackedStorage) {
  // Per entry (K and V): f16 2 x 32; int8 2 x (16 + 1 scale of 2); int4 2 x (8 + 4).
  const uint64_t n = uint64_t{kLayers} * kKv * 50;
  auto bytes = [&](const char* spec) {
    auto cache = PolicyCache::create(parse_policy_spec(spec), ctx());
    append(*cache, 0, 0, 0, 50);
    return cache->memory().hot;
  };
  EXPECT_EQ(bytes("full+f16").kv, n * 2 * 32);
  EXPECT_EQ(bytes("full+int8").kv, n * 2 * 16);
  EXPECT_EQ(bytes("full+int8").scales, n * 2 * 2);
  EXPECT_EQ(bytes("full+int4").kv, n * 2 * 8);
  EXPECT_EQ(bytes("full+int4").scales, n * 2 * 4);
  // KIVI 2-bit, group 4, residual 8: of 50 tokens, 48 keys quantized (6
  // blocks), 2 in f32; 42 values quantized, 8 in f32.
  const MemoryBytes k = bytes("full+kivi2:group=4,residual=8");
  EXPECT_EQ(k.kv, uint64_t{kLayers} * kKv * (48 * 4 + 42 * 4 + (2 + 8) * kDim * 4));
  EXPECT_EQ(k.scales, uint64_t{kLayers} * kKv * (12 * kDim * 4 + 42 * 4 * 4));
}

TEST(CacheStore, Int8IsHalfOfF16PlusScalesAndInt4AQuarter) {
  // SmolLM2's head size (64), groups of 32, the same 512-token window.
  CacheContext c;
  c.shape = {2, 3, 9, 64};
  c.rope.n_dims = 64;
  auto bytes = [&](const std::string& storage) {
    auto cache = PolicyCache::create(parse_policy_spec("window:budget=512+" + storage), c);
    const auto begun = test::begin_test_step(*cache, 0, 600);
    std::vector<float> k(600 * 3 * 64), v(k.size());
    for (size_t i = 0; i < k.size(); ++i) k[i] = std::sin(0.1f * i), v[i] = std::cos(0.3f * i);
    for (int l = 0; l < 2; ++l) cache->append(l, k.data(), v.data());
    cache->end_step();
    return cache->memory().hot;
  };
  const MemoryBytes f16 = bytes("f16"), i8 = bytes("int8"), i4 = bytes("int4");
  EXPECT_EQ(f16.kv, uint64_t{2} * 3 * 512 * 2 * 64 * 2);
  EXPECT_EQ(i8.kv * 2, f16.kv);                 // codes: exactly half
  EXPECT_EQ(i8.scales * 32, f16.kv);            // one f16 scale per 32 elements
  EXPECT_LT(i8.kv + i8.scales, 0.54 * f16.kv);  // 53.1% with its scales
  EXPECT_EQ(i4.kv * 4, f16.kv);                 // codes: exactly a quarter
  EXPECT_LT(i4.kv + i4.scales, 0.32 * f16.kv);  // 31.25% with (min, step) per group
  EXPECT_EQ(i8.meta, f16.meta);                 // the same entries
}

TEST(CacheStore, SequenceOperationsRejectBadArgumentsWithTypedErrors) {
  auto cache = PolicyCache::create(parse_policy_spec("full"), ctx());
  append(*cache, 0, 0, 0, 10);
  const MemoryReport before = cache->memory();
  auto message = [&](auto&& op) -> std::string {
    try {
      op();
    } catch (const SequenceError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message([&] { cache->seq_rm(64, -1, -1); }),
            "seq_rm: sequence id 64 out of range [0, 64) (or -1 for every sequence)");
  EXPECT_EQ(message([&] { cache->seq_cp(-1, 1, -1, -1); }),
            "seq_cp: sequence id -1 out of range [0, 64)");
  EXPECT_EQ(message([&] { cache->seq_keep(7); }), "seq_keep: unknown sequence 7");
  EXPECT_EQ(message([&] { cache->seq_rm(0, -2, 5); }),
            "seq_rm: position -2 is negative (only -1, an open end, is allowed)");
  EXPECT_EQ(message([&] { cache->seq_add(0, 0, int64_t{1} << 31, 1); }),
            "seq_add: position 2147483648 is beyond int32");
  EXPECT_EQ(message([&] { cache->seq_div(0, 5, 2, 2); }), "seq_div: reversed range [5, 2)");
  EXPECT_EQ(message([&] { cache->seq_div(0, 0, 5, 0); }),
            "seq_div: divisor 0 must be in [1, 2^31)");
  EXPECT_EQ(message([&] { cache->seq_add(0, 0, -1, int64_t{1} << 32); }),
            "seq_add: shift 4294967296 is beyond int32");
  EXPECT_EQ(message([&] { cache->pos_max(99); }), "pos_max: sequence id 99 out of range [0, 64)");
  EXPECT_EQ(cache->memory().hot, before.hot) << "failed operations change nothing";
  // Unknown but valid: empty.
  EXPECT_EQ(cache->pos_min(5), -1);
  EXPECT_EQ(cache->pos_max(5), -1);
  // Shifting entries another sequence shares is unsupported (positions are per entry).
  cache->seq_cp(0, 1, 0, 5);
  EXPECT_THROW(cache->seq_add(0, -1, -1, 3), UnsupportedOperation);
  EXPECT_NO_THROW(cache->seq_add(0, 5, -1, 3));  // only unshared entries move
  EXPECT_EQ(cache->pos_max(0), 12);
  EXPECT_EQ(cache->pos_max(1), 4);
  // seq_add into negative positions removes those entries (as llama.cpp).
  cache->seq_rm(1, -1, -1);
  cache->seq_add(0, -1, -1, -8);
  EXPECT_EQ(cache->pos_min(0), 0);
  EXPECT_EQ(cache->pos_max(0), 4);
  EXPECT_EQ(cache->memory().hot.entries, uint64_t{kLayers} * kKv * 5);
  // seq_div: positions 0..4 / 2 -> 0,0,1,1,2, keys re-rotated.
  cache->seq_div(0, -1, -1, 2);
  EXPECT_EQ(cache->pos_max(0), 2);
  cache->clear();
  EXPECT_EQ(cache->memory().hot.total(), 0u);
  EXPECT_THROW(cache->seq_rm(0, -1, -1), SequenceError);  // unknown after clear
}

TEST(CacheStore, OffloadRestoresThePagesOfHighestQuestBoundBitIdentically) {
  // A window of 4 hot entries plus a restore budget of its own (4 tokens =
  // 2 pages of 2); evicted tokens go cold in position order. Token 5's key
  // is huge along the query, so its page has the highest bound: the next
  // step's queries bring it back and attend it in that same step.
  for (const char* tier : {"ram", "file"}) {
    SCOPED_TRACE(tier);
    auto cache = PolicyCache::create(
        parse_policy_spec(std::string("window:budget=4+offload:page=2,restore=4,tier=") + tier),
        ctx());
    EXPECT_EQ(cache->layer_budget(0), 4 + 4);
    auto kf = [](int l, int h, int t, int c) { return t == 5 ? 30.0f : kval(l, h, t, c); };
    append(*cache, 0, 0, 0, 30, false, kf);  // the query (all 0.1) favours large keys
    const MemoryReport m = cache->memory();
    EXPECT_EQ(m.cold.entries, uint64_t{kLayers} * kKv * 26);  // 30 - 4 kept in the window
    append(*cache, 0, 30, 30, 1, false, kf);  // a step whose query restores before attending
    std::vector<float> k(kDim), v(kDim);
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKv; ++h) {
        EXPECT_EQ(cache->store().restored(l, h), 4);
        EXPECT_LE(cache->store().hot_entries(0, l, h), cache->layer_budget(l));
        // Token 5's page (tokens 4 and 5) is back, rows bit-identical.
        const Segment* r = cache->store().segment(l, h, kRestored);
        bool found = false;
        for (int32_t i = 0; i < r->size(); ++i) {
          const int t = r->meta.src[i];
          r->decode_keys(i, 1, k.data());
          r->decode_values(i, 1, v.data());
          for (int c = 0; c < kDim; ++c) {
            ASSERT_EQ(k[c], kf(l, h, t, c));
            ASSERT_EQ(v[c], vval(l, h, t, c));
          }
          EXPECT_EQ(r->meta.pos[i], t);
          found = found || t == 5;
        }
        EXPECT_TRUE(found) << "the page of highest bound was not restored";
        // Still held, cold, and counted once; attended while restored.
        EXPECT_TRUE(cache->holds(l, h, 5));
        EXPECT_TRUE(cache->attends(l, h, 5));
        EXPECT_TRUE(cache->holds(l, h, 0));
        EXPECT_FALSE(cache->attends(l, h, 0));
        EXPECT_EQ(cache->held_sources(l, h).size(), 31u);
      }
    // The restored copies count as hot memory, the cold pages as cold.
    EXPECT_EQ(cache->memory().hot.entries, uint64_t{kLayers} * kKv * 8);
    // A clone owns its own cold tier (a second file for tier=file).
    auto copy = cache->clone();
    cache->clear();
    EXPECT_EQ(copy->memory().cold.entries, uint64_t{kLayers} * kKv * 27);
    EXPECT_TRUE(copy->store().find(0, 0, 1, k.data(), v.data()));
    EXPECT_EQ(k[3], kval(0, 0, 1, 3));
  }
}

TEST(CacheStore, RestoredPagesAreReadInPlaceAndCopiedBeforeTheirPageIsDropped) {
  // Capacity 2 = one page: after the prompt the cold tier holds tokens 24
  // and 25 only. The next step restores that page by reference (no copy),
  // then its own eviction (token 26) opens a new page and drops the old one:
  // the restored rows must have been copied first, bit-identical.
  auto cache = PolicyCache::create(
      parse_policy_spec("window:budget=4+offload:page=2,restore=2,capacity=2"), ctx());
  append(*cache, 0, 0, 0, 30);
  append(*cache, 0, 30, 30, 1, true);  // restores [24, 25], then evicts 26 and drops [24, 25]
  std::vector<float> k(kDim), v(kDim);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      const auto& r = static_cast<const RowSegment&>(*cache->store().segment(l, h, kRestored));
      ASSERT_EQ(r.size(), 2);
      EXPECT_FALSE(r.holds_refs());
      EXPECT_FALSE(cache->holds(l, h, 24));  // dropped from the cold tier
      for (int32_t i = 0; i < 2; ++i) {
        const int t = r.meta.src[i];
        EXPECT_TRUE(t == 24 || t == 25);
        r.decode_keys(i, 1, k.data());
        r.decode_values(i, 1, v.data());
        for (int c = 0; c < kDim; ++c) {
          ASSERT_EQ(k[c], kval(l, h, t, c));
          ASSERT_EQ(v[c], vval(l, h, t, c));
        }
      }
    }
  // The next step restores the page now cold (token 26) by reference again;
  // its eviction (27) fills that page without dropping anything.
  append(*cache, 0, 31, 31, 1, true);
  const auto& r = static_cast<const RowSegment&>(*cache->store().segment(0, 0, kRestored));
  ASSERT_EQ(r.size(), 1);
  EXPECT_TRUE(r.holds_refs());
  EXPECT_EQ(r.meta.src[0], 26);
}

TEST(CacheStore, OffloadAfterPrefillRestoresForThePromptsLastQuery) {
  // timing=once: nothing is evicted during the prompt; end_prefill evicts
  // (position order: pages [0,1], [2,3], ...) and the prompt's last query
  // picks the pages held at question time.
  auto cache = PolicyCache::create(
      parse_policy_spec("window:budget=4,timing=once+offload:page=2,restore=2"), ctx());
  auto kf = [](int l, int h, int t, int c) { return t == 9 ? 30.0f : kval(l, h, t, c); };
  append(*cache, 0, 0, 0, 30, false, kf);
  EXPECT_EQ(cache->memory().cold.entries, 0u);
  cache->end_prefill();
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      const Segment* r = cache->store().segment(l, h, kRestored);
      ASSERT_EQ(r->size(), 2);
      EXPECT_EQ(r->meta.src[0], 8);  // token 9's page: tokens 8 and 9
      EXPECT_EQ(r->meta.src[1], 9);
      // Every cold page holds neighbouring positions.
      for (const ColdPage& p : cache->store().cold()->head(l * kKv + h).pages) {
        ASSERT_EQ(p.meta.size(), 2);
        EXPECT_EQ(p.meta.pos[1], p.meta.pos[0] + 1);
      }
    }
}

TEST(CacheStore, TheSeedsKnobsBoundTheColdTierAndTruncateAfterEveryCall) {
  // capacity (the seed's offload_size): the oldest pages go when it is exceeded.
  auto bounded =
      PolicyCache::create(parse_policy_spec("window:budget=4+offload:page=2,capacity=6"), ctx());
  append(*bounded, 0, 0, 0, 30);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      EXPECT_EQ(bounded->store().cold()->head(l * kKv + h).entries(), 6);
      EXPECT_FALSE(bounded->holds(l, h, 19));
      EXPECT_TRUE(bounded->holds(l, h, 20));  // evicted 0..25, the newest 6 kept cold
    }
  // timing=call: nothing during the prompt (one call), then after the prompt
  // and after every decode step; timing=once lets decoding grow.
  for (const char* t : {"call", "once"}) {
    SCOPED_TRACE(t);
    auto cache =
        PolicyCache::create(parse_policy_spec(std::string("window:budget=8,timing=") + t), ctx());
    append(*cache, 0, 0, 0, 20);
    EXPECT_EQ(cache->store().hot_entries(0, 0, 0), 20);
    cache->end_prefill();
    EXPECT_EQ(cache->store().hot_entries(0, 0, 0), 8);
    append(*cache, 0, 20, 20, 1, true);
    append(*cache, 0, 21, 21, 1, true);
    EXPECT_EQ(cache->store().hot_entries(0, 0, 0), std::string(t) == "call" ? 8 : 10);
  }
}

// The roofline's restore bytes: every cold page's key bounds (2 x dim
// floats), once every `every` steps; nothing without offload.
TEST(CacheStore, RestoreReadsEveryColdPagesBoundsPerStep) {
  for (int every : {1, 4}) {
    auto cache =
        PolicyCache::create(parse_policy_spec("window:budget=4+offload:page=2,restore=2,every=" +
                                              std::to_string(every)),
                            ctx());
    append(*cache, 0, 0, 0, 30);
    size_t pages = 0;
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKv; ++h) pages += cache->store().cold()->head(l * kKv + h).pages.size();
    ASSERT_GT(pages, 0u);
    EXPECT_EQ(cache->restore_bytes_per_step(),
              static_cast<double>(pages) * 2 * sizeof(float) * kDim / every);
  }
  auto plain = PolicyCache::create(parse_policy_spec("window:budget=4"), ctx());
  append(*plain, 0, 0, 0, 30);
  EXPECT_EQ(plain->restore_bytes_per_step(), 0.0);
}

TEST(CacheStore, MergeFoldsEvictedEntriesIntoOneWeightedMean) {
  auto cache =
      PolicyCache::create(parse_policy_spec("window:budget=5+merge:weight=uniform"), ctx());
  append(*cache, 0, 0, 0, 12);
  // Budget 5 = 4 newest tokens + the summary of tokens 0..7 (uniform mean).
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kKv; ++h) {
      const Segment* s = cache->store().segment(l, h, kSummary);
      ASSERT_EQ(s->size(), 1);
      EXPECT_EQ(s->meta.src[0], -1);
      EXPECT_EQ(s->meta.pos[0], 7);  // the newest merged position
      std::vector<float> k(kDim), v(kDim);
      s->decode_keys(0, 1, k.data());
      s->decode_values(0, 1, v.data());
      for (int c = 0; c < kDim; ++c) {
        double mk = 0, mv = 0;
        for (int t = 0; t < 8; ++t) mk += kval(l, h, t, c), mv += vval(l, h, t, c);
        EXPECT_NEAR(k[c], mk / 8, 1e-5);
        EXPECT_NEAR(v[c], mv / 8, 1e-5);
      }
      EXPECT_EQ(cache->store().hot_entries(0, l, h), 5);
      EXPECT_FALSE(cache->holds(l, h, 7));
    }
}

TEST(CacheStore, KiviQuantizesKeysInBlocksOfRAndValuesBeyondTheNewestR) {
  auto cache = PolicyCache::create(parse_policy_spec("full+kivi2:group=4,residual=8"), ctx());
  auto state = [&] {
    const auto* k = dynamic_cast<const KiviSegment*>(cache->store().segment(0, 0, kMain));
    return std::pair{k->quantized_keys(), k->quantized_values()};
  };
  append(*cache, 0, 0, 0, 13);  // prefill 13: keys 8 quantized (13 mod 8 = 5 full), values 5
  EXPECT_EQ(state(), (std::pair{8, 5}));
  int32_t t = 13;
  for (; t < 16; ++t) append(*cache, 0, t, t, 1, true);  // 16 tokens: 8 full keys -> flushed
  EXPECT_EQ(state(), (std::pair{16, 8}));
  append(*cache, 0, t, t, 1, true);
  EXPECT_EQ(state(), (std::pair{16, 9}));
  // Quantized keys cannot be re-rotated; the f32 residual could.
  EXPECT_THROW(cache->seq_add(0, 0, -1, 1), UnsupportedOperation);
  EXPECT_NO_THROW(cache->seq_add(0, 16, -1, 1));
}

// The ablation settings: keys per token follow the values' rule (all but the
// newest R, token by token), an f32 side is never quantized, and the memory
// accounting counts each side in its own format.
TEST(CacheStore, KiviSidesQuantizeByTheirOwnRule) {
  struct Case {
    const char* spec;
    std::pair<int32_t, int32_t> after13, after17;  // (quantized keys, quantized values)
  };
  for (const Case& c :
       {Case{"full+kivi2:group=4,residual=8", {8, 5}, {16, 9}},
        Case{"full+kivi2:group=4,residual=8,keys=token", {5, 5}, {9, 9}},
        Case{"full+kivi2:group=4,residual=8,keys=f32", {0, 5}, {0, 9}},
        Case{"full+kivi2:group=4,residual=8,values=f32", {8, 0}, {16, 0}},
        Case{"full+kivi2:group=4,residual=8,keys=token,values=f32", {5, 0}, {9, 0}}}) {
    SCOPED_TRACE(c.spec);
    auto cache = PolicyCache::create(parse_policy_spec(c.spec), ctx());
    const auto* seg = dynamic_cast<const KiviSegment*>(cache->store().segment(0, 0, kMain));
    ASSERT_NE(seg, nullptr);
    auto state = [&] { return std::pair{seg->quantized_keys(), seg->quantized_values()}; };
    append(*cache, 0, 0, 0, 13);
    EXPECT_EQ(state(), c.after13);
    for (int32_t t = 13; t < 17; ++t) append(*cache, 0, t, t, 1, true);
    EXPECT_EQ(state(), c.after17);
    // Bytes of one head: 2-bit codes (dim / 4 bytes) per quantized row; a
    // per-token row adds its groups' f16 (min, step), a per-channel block of
    // `group` keys adds an f16 (min, step) per channel; f32 rows 4 bytes each.
    const int dim = kDim, groups = dim / 4;
    const auto [kq, vq] = state();
    const bool token_keys = std::string(c.spec).find("keys=token") != std::string::npos;
    const uint64_t key_params = token_keys ? uint64_t(kq) * groups * 4 : uint64_t(kq / 4) * dim * 4;
    MemoryReport r;
    r.hot_layers.resize(1);
    MemoryTally t(r, 0, false);
    seg->tally(t);
    const uint64_t kv = r.hot.kv, scales = r.hot.scales;
    EXPECT_EQ(kv, uint64_t(kq + vq) * (dim / 4) + uint64_t(17 - kq + 17 - vq) * dim * 4);
    EXPECT_EQ(scales, key_params + uint64_t(vq) * groups * 4);
  }
  EXPECT_THROW(parse_policy_spec("kivi2:keys=f32,values=f32"), InputError);
}

}  // namespace
}  // namespace kvbench
