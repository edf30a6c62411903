// Attention reading K/V in place from pieces of any storage (f32, f16, bf16,
// int8, int4, int2 rows in the codecs' own layout; KIVI's per-channel keys
// through the policy caches), several pieces per head, rows
// addressed directly, through an index or through row pointers: against the
// naive reference (which decodes every row through RowCodec::decode), on
// every instruction-set path, decode and prefill, with probabilities.
//
// Tolerance: the kernels dequantize with the codec's own operations (a
// multiply, then an add; the build does not contract them into FMAs), so
// they see bit-identical K/V values (checked exactly below); what remains is
// f32 summation order against the naive double sums, the same 1e-5 as the
// f32 tests in test_attention.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "model/ops/attention.h"
#include "model/ops/attention_kernels.h"
#include "policies/codec.h"
#include "policies/policy_cache.h"
#include "policies/policy_spec.h"
#include "tests/support/piece_cache.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

using test::max_abs_diff;

using test::Addr;
using test::PieceCache;
using test::PieceSpec;

struct Layout {
  const char* name;
  std::vector<PieceSpec> pieces;
};

// Storage layouts a policy cache produces: one codec's main rows (plain or
// through the visible indices), the open step's f32 rows after them,
// restored pages by pointer, a summary.
std::vector<Layout> layouts(int n) {
  const int a = std::max(1, n * 2 / 3), b = std::max(1, n - a);
  return {
      {"f32", {{CodecKind::F32, 0, Addr::Plain, n}}},
      {"f16", {{CodecKind::F16, 0, Addr::Plain, n}}},
      {"bf16", {{CodecKind::BF16, 0, Addr::Plain, n}}},
      {"int8 g32", {{CodecKind::Int8, 32, Addr::Plain, n}}},
      {"int8 g16", {{CodecKind::Int8, 16, Addr::Plain, n}}},
      {"int8 g8", {{CodecKind::Int8, 8, Addr::Plain, n}}},
      {"int4 g32", {{CodecKind::Int4, 32, Addr::Plain, n}}},
      {"int4 g16", {{CodecKind::Int4, 16, Addr::Plain, n}}},  // pair order on AVX2 only
      {"int4 g64", {{CodecKind::Int4, 64, Addr::Plain, n}}},
      {"int4 g4", {{CodecKind::Int4, 4, Addr::Plain, n}}},
      {"int2 g32", {{CodecKind::Int2, 32, Addr::Plain, n}}},
      // Q2 values read through one table per group (u2_table): a group per
      // AVX-512 vector, two, and four.
      {"int2 g16", {{CodecKind::Int2, 16, Addr::Plain, n}}},
      {"int2 g64", {{CodecKind::Int2, 64, Addr::Plain, n}}},
      {"int8 + f32 step",
       {{CodecKind::Int8, 32, Addr::Plain, a}, {CodecKind::F32, 0, Addr::Plain, b}}},
      {"int4 index + f32",
       {{CodecKind::Int4, 32, Addr::Index, a}, {CodecKind::F32, 0, Addr::Index, b}}},
      {"f32 + pages", {{CodecKind::F32, 0, Addr::Plain, b}, {CodecKind::F32, 0, Addr::Ptrs, a}}},
      {"int8 + int8 pages + f32",
       {{CodecKind::Int8, 32, Addr::Plain, a},
        {CodecKind::Int8, 32, Addr::Ptrs, b},
        {CodecKind::F32, 0, Addr::Plain, 1}}},
      {"f16 index + bf16 pages",
       {{CodecKind::F16, 0, Addr::Index, a}, {CodecKind::BF16, 0, Addr::Ptrs, b}}},
      {"f32 + some pages",
       {{CodecKind::F32, 0, Addr::Plain, b}, {CodecKind::F32, 0, Addr::IndexPtrs, a}}},
      {"int4 some pages", {{CodecKind::Int4, 32, Addr::IndexPtrs, n}}},
  };
}

struct Case {
  int n_tokens, n_keys, group, n_kv_heads;
};

void check(const Case& c, int head_dim, uint32_t seed, const std::vector<Layout>& lays) {
  for (const Layout& lay : lays) {
    PieceCache cache(c.n_kv_heads, c.n_kv_heads * c.group, head_dim);
    std::mt19937 rng(seed);
    int32_t last = 0;
    for (int h = 0; h < c.n_kv_heads; ++h) {
      int32_t at = static_cast<int32_t>(rng() % 3);
      cache.set_head(h, lay.pieces, rng, at);
      last = std::max(last, at);
    }
    const AttentionShape shape{c.group * c.n_kv_heads, c.n_kv_heads, head_dim};
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> q(int64_t{c.n_tokens} * shape.n_heads * head_dim);
    for (auto& x : q) x = u(rng);
    std::vector<int32_t> qpos(c.n_tokens);
    for (auto& p : qpos) p = static_cast<int32_t>(rng() % (last + 2));
    qpos.back() = last;  // at least one query sees every key
    cache.request = {true, -1, false};

    std::vector<float> ref(q.size());
    cache.observed.clear();
    attend_naive(shape, 0, q.data(), qpos, cache, ref.data());
    const auto ref_probs = cache.observed;
    for (CpuPath path : test::supported_paths()) {
      for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        AttentionScratch scratch;
        scratch.path = path;
        std::vector<float> out(q.size(), NAN);
        cache.observed.clear();
        attend(shape, 0, q.data(), qpos, cache, out.data(), pool, scratch);
        const std::string what =
            std::string(lay.name) + " tokens " + std::to_string(c.n_tokens) + " keys " +
            std::to_string(c.n_keys) + " head_dim " + std::to_string(head_dim) + " path " +
            std::string(cpu_path_name(path)) + " threads " + std::to_string(threads);
        EXPECT_LE(max_abs_diff(out.data(), ref.data(), ref.size()), 1e-5f) << what;
        ASSERT_EQ(cache.observed.size(), ref_probs.size()) << what;
        for (const auto& [key, rows] : ref_probs)
          EXPECT_LE(max_abs_diff(cache.observed[key].data(), rows.data(), rows.size()), 1e-5f)
              << what;
      }
    }
  }
}

void check(const Case& c, int head_dim, uint32_t seed) {
  check(c, head_dim, seed, layouts(c.n_keys));
}

TEST(AttentionPieces, DecodeReadsEveryStorageInPlaceLikeTheNaiveDecode) {
  uint32_t seed = 1;
  for (const Case& c :
       {Case{1, 1, 3, 1}, Case{1, 70, 3, 3}, Case{1, 300, 3, 2}, Case{1, 1300, 4, 1}})
    check(c, 64, seed++);
  check({1, 200, 2, 2}, 32, seed++);
  check({1, 150, 1, 1}, 128, seed++);
  check({1, 150, 4, 1}, 256, seed++);  // Gemma 3's heads (a kernel copy of their own)
}

TEST(AttentionPieces, PrefillReadsEveryStorageInPlaceLikeTheNaiveDecode) {
  uint32_t seed = 50;
  for (const Case& c : {Case{2, 1, 3, 1}, Case{17, 65, 3, 2}, Case{40, 200, 3, 3}})
    check(c, 64, seed++);
  check({20, 100, 2, 1}, 32, seed++);
}

// Groups that are not powers of two (head_dim 96: Phi-3's) are not read in
// place (the kernels find a row's group by a shift) but decoded into scratch:
// the same numbers as the naive decode, decode and prefill.
TEST(AttentionPieces, GroupsNotAPowerOfTwoAreDecodedLikeTheNaiveDecode) {
  const std::vector<Layout> lays = {
      {"int8 g48", {{CodecKind::Int8, 48, Addr::Plain, 150}}},
      {"int4 g24", {{CodecKind::Int4, 24, Addr::Plain, 150}}},
      {"int2 g96 + int4 g32",
       {{CodecKind::Int2, 96, Addr::Plain, 100}, {CodecKind::Int4, 32, Addr::Plain, 50}}},
  };
  check({1, 150, 3, 2}, 96, 70, lays);
  check({9, 150, 3, 2}, 96, 71, lays);
}

// The same view read in place and through keys()/values() (decoded into
// scratch): the same numbers up to summation order.
TEST(AttentionPieces, InPlaceEqualsTheDecodedFallback) {
  for (int n_tokens : {1, 9}) {
    for (const Layout& lay : layouts(333)) {
      PieceCache cache(2, 6, 64);
      std::mt19937 rng(11);
      int32_t at = 0;
      for (int h = 0; h < 2; ++h) cache.set_head(h, lay.pieces, rng, at);
      const AttentionShape shape{6, 2, 64};
      std::vector<float> q(int64_t{n_tokens} * 6 * 64);
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      for (auto& x : q) x = u(rng);
      std::vector<int32_t> qpos(n_tokens);
      for (int t = 0; t < n_tokens; ++t) qpos[t] = at - n_tokens + t;
      ThreadPool pool(2);
      AttentionScratch s1, s2;
      std::vector<float> a(q.size()), b(q.size());
      cache.in_place = true;
      attend(shape, 0, q.data(), qpos, cache, a.data(), pool, s1);
      cache.in_place = false;
      attend(shape, 0, q.data(), qpos, cache, b.data(), pool, s2);
      EXPECT_LE(max_abs_diff(a.data(), b.data(), a.size()), 1e-5f)
          << lay.name << " tokens " << n_tokens;
    }
  }
}

// Dequantization in registers gives the codec's values bit for bit, on every
// path: pack_keys writes the rows it reads as f32 (transposed).
TEST(AttentionPieces, DequantizationInRegistersIsBitIdenticalToTheCodec) {
  const int hd = 64, n = 37;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (CodecKind kind :
       {CodecKind::F16, CodecKind::BF16, CodecKind::Int8, CodecKind::Int4, CodecKind::Int2}) {
    for (int group : {16, 32, 64}) {
      const RowCodec codec(kind, hd, group);
      std::vector<uint8_t> bytes(n * codec.row_bytes());
      std::vector<float> row(hd), want(int64_t{n} * hd);
      for (int j = 0; j < n; ++j) {
        for (auto& x : row) x = u(rng);
        codec.encode(row.data(), bytes.data() + j * codec.row_bytes());
        codec.decode(bytes.data() + j * codec.row_bytes(), want.data() + int64_t{j} * hd);
      }
      attn::Rows r;
      r.type = kv_element(kind);
      r.data = bytes.data();
      r.stride = codec.row_bytes();
      r.set_group(codec.group());
      r.n = n;
      for (const attn::Kernels* K :
           {attn::scalar_kernels(), attn::avx2_kernels(), attn::avx512_kernels()}) {
        if (!K) continue;
        if (K == attn::avx2_kernels() && !cpu_path_supported(CpuPath::Avx2)) continue;
        if (K == attn::avx512_kernels() && !cpu_path_supported(CpuPath::Avx512)) continue;
        if (group % K->width) continue;
        std::vector<float> kt(int64_t{hd} * attn::kKeyTile);
        K->pack_keys(r, hd, 0, n, kt.data());
        for (int j = 0; j < n; ++j)
          for (int d = 0; d < hd; ++d)
            ASSERT_EQ(std::memcmp(&kt[d * attn::kKeyTile + j], &want[int64_t{j} * hd + d], 4), 0)
                << codec_name(kind) << " group " << group << " width " << K->width << " row " << j
                << " d " << d;
      }
    }
  }
}

// The policy caches' own views (CacheStore pieces): every storage, KIVI with
// keys and values quantized up to different points (three pieces: K2 + Q2,
// F32 + Q2 or K2 + F32, F32 + F32), the int8 / int4 step rows beside the
// encoded ones, `mixed`, and a second sequence that holds only some entries
// (indexed pieces). attend() against attend_naive, decode and a prefill chunk.
TEST(AttentionPieces, PolicyCachesAreReadInPlaceLikeTheNaiveDecode) {
  const KvShape shape{1, 2, 6, 64};
  const AttentionShape ashape{6, 2, 64};
  for (const char* spec :
       {"full", "full+f16", "full+bf16", "full+int8", "full+int4:group=16",
        "full+kivi2:group=16,residual=32", "full+kivi2:group=16,residual=32,keys=token",
        "full+kivi2:group=16,residual=32,keys=f32", "full+kivi2:group=16,residual=32,values=f32",
        "full+kivi2:group=16,residual=32,keys=token,values=f32", "full+mixed:full=0.5"}) {
    for (int n_ctx : {20, 70, 150}) {
      CacheContext cc;
      cc.shape = shape;
      cc.rope.n_dims = 64;
      cc.context_tokens = 256;
      auto cache = PolicyCache::create(parse_policy_spec(spec), cc);
      std::mt19937 rng(static_cast<uint32_t>(n_ctx));
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      // Chunks of 7 (KIVI flushes its keys R at a time, its values beyond
      // the newest R: the two cut points differ).
      for (int t0 = 0; t0 < n_ctx; t0 += 7) {
        const int n = std::min(7, n_ctx - t0);
        std::vector<int32_t> pos(n), tok(n, 1);
        for (int i = 0; i < n; ++i) pos[i] = t0 + i;
        std::vector<float> k(int64_t{n} * 2 * 64), v(k.size());
        for (auto& x : k) x = u(rng);
        for (auto& x : v) x = u(rng);
        cache->begin_step({0, StepPhase::Prefill, pos, tok});
        cache->append(0, k.data(), v.data());
        cache->end_step();
      }
      for (bool second_sequence : {false, true}) {
        int seq = 0;
        if (second_sequence) {  // sequence 1 holds the entries at positions >= 5 only
          cache->seq_cp(0, 1, 5, -1);
          seq = 1;
        }
        for (int n_q : {1, 5}) {
          std::vector<int32_t> qpos(n_q), tok(n_q, 1);
          for (int i = 0; i < n_q; ++i) qpos[i] = n_ctx + i;
          std::vector<float> q(int64_t{n_q} * 6 * 64), kn(int64_t{n_q} * 2 * 64), vn(kn.size());
          for (auto& x : q) x = u(rng);
          for (auto& x : kn) x = u(rng);
          for (auto& x : vn) x = u(rng);
          auto clone = cache->clone();
          clone->begin_step({seq, n_q == 1 ? StepPhase::Decode : StepPhase::Prefill, qpos, tok});
          clone->append(0, kn.data(), vn.data());
          std::vector<float> ref(q.size());
          attend_naive(ashape, 0, q.data(), qpos, *clone, ref.data());
          for (CpuPath path : test::supported_paths()) {
            ThreadPool pool(2);
            AttentionScratch scratch;
            scratch.path = path;
            std::vector<float> out(q.size(), NAN);
            attend(ashape, 0, q.data(), qpos, *clone, out.data(), pool, scratch);
            EXPECT_LE(max_abs_diff(out.data(), ref.data(), ref.size()), 1e-5f)
                << spec << " context " << n_ctx << " queries " << n_q << " sequence " << seq
                << " path " << cpu_path_name(path);
          }
          // Every view is read in place, a second sequence's subset of KIVI's
          // pieces included.
          EXPECT_FALSE(clone->view(0, 0).pieces().empty()) << spec << " context " << n_ctx;
          clone->end_step();
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvbench
