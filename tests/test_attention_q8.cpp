// Decode scores of quantized keys against an int8 query
// (AttentionShape::q8_query, model/ops/attention_q8.h):
//  - every instruction-set path writes the scalar reference's scores bit for
//    bit (the integer sums are exact, vpdpbusd, vpmaddubsw or f32; the
//    epilogue is one sequence of operations), for Q8 / Q4 / Q2 keys, groups
//    the integer kernels take and groups they leave to the f32 sums, head
//    sizes 32-512, rows plain or through an index; also at the codes'
//    extremes, where vpmaddubsw's pairs come nearest to saturating;
//  - each score is within the query's rounding of the f32 score: at most
//    sum_b a_b / 2 x sum_{d in b} |k_d - centre_b| (a_b the block's query
//    scale; the centre 0 for int8, min + 8 step for int4, min + 2 step for
//    int2), and the option changes the scores (it is not a no-op);
//  - a query a thread made for one key type is not reused for another in
//    the same head and decode call;
//  - the same for KIVI's per-channel keys (K2), whose query is quantized
//    per block of tokens;
//  - through attend(): prefill is untouched, decode is the same whatever the
//    thread count, and near the exact attention.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/gguf/ggml_types.h"
#include "model/ops/attention.h"
#include "model/ops/attention_kernels.h"
#include "model/ops/quant_dot.h"
#include "policies/codec.h"
#include "policies/policy_cache.h"
#include "policies/policy_spec.h"
#include "tests/support/piece_cache.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

struct Path {
  std::string name;
  const attn::Kernels* kernels;
};

std::vector<Path> kernel_paths() {
  std::vector<Path> out = {{"scalar", attn::scalar_kernels()}};
  if (cpu_path_supported(CpuPath::Avx2) && attn::avx2_kernels())
    out.push_back({"avx2", attn::avx2_kernels()});
  if (cpu_path_supported(CpuPath::Avx512) && attn::avx512_kernels())
    out.push_back({"avx512", attn::avx512_kernels()});
  return out;
}

// n keys of one KV head, encoded by `codec`; with `indexed`, row j lives at
// slot 2j + 1 of an array twice as long (Rows::index).
struct Keys {
  RowCodec codec;
  std::vector<uint8_t> bytes;
  std::vector<int32_t> index, pos;
  std::vector<float> decoded;  // [n][hd]: what the codec decodes
  attn::Rows rows;
};

Keys make_keys(CodecKind kind, int hd, int group, int n, bool indexed, std::mt19937& rng) {
  Keys k;
  k.codec = RowCodec(kind, hd, group);
  const int64_t rb = k.codec.row_bytes();
  const int slots = indexed ? 2 * n : n;
  k.bytes.assign(slots * rb, 0);
  k.decoded.resize(int64_t{n} * hd);
  std::normal_distribution<float> u(0.0f, 1.0f);
  std::vector<float> row(hd);
  for (int j = 0; j < n; ++j) {
    const int slot = indexed ? 2 * j + 1 : j;
    for (auto& x : row) x = u(rng);
    k.codec.encode(row.data(), k.bytes.data() + slot * rb);
    k.codec.decode(k.bytes.data() + slot * rb, k.decoded.data() + int64_t{j} * hd);
    k.index.push_back(slot);
    k.pos.push_back(j);
  }
  k.rows.type = kv_element(kind);
  k.rows.data = k.bytes.data();
  k.rows.stride = rb;
  k.rows.set_group(group);
  k.rows.index = indexed ? k.index.data() : nullptr;
  k.rows.n = n;
  return k;
}

// The centre of row j's block b (Q4 / Q2: codes, then (min, step) f16 per
// group; decoded values are min + code x step): min + z step, z = 8 (Q4)
// or 2 (Q2), the value the int8-query scores take the codes' offset from.
float block_centre(const Keys& k, int j, int b) {
  const int hd = k.codec.dim();
  const bool q4 = k.codec.kind() == CodecKind::Int4;
  const uint8_t* row = k.bytes.data() + k.index[j] * k.codec.row_bytes();
  uint16_t h[2];
  std::memcpy(h, row + (q4 ? hd / 2 : hd / 4) + 4 * b, 4);
  return fp16_to_fp32(h[0]) + (q4 ? 8.0f : 2.0f) * fp16_to_fp32(h[1]);
}

// Raw scores [G][n] (log2 domain) of one decode block over all n keys
// (values: v, or the keys' rows).
std::vector<float> block_scores(const attn::Kernels& K, const attn::Rows& rows,
                                const std::vector<int32_t>& pos, const std::vector<float>& q, int G,
                                int hd, bool q8, const attn::Rows* v = nullptr) {
  const int32_t n = rows.n;
  attn::DecodeBlock a;
  a.q = q.data();
  a.scale = 1.4426950408889634f / std::sqrt(static_cast<float>(hd));
  a.group = G;
  a.head_dim = hd;
  a.k = rows;
  a.v = v ? *v : rows;
  a.pos = pos.data();
  a.qpos = n;
  a.begin = 0;
  a.end = n;
  std::vector<float> scores(int64_t{G} * n, NAN);
  a.scores = scores.data();
  a.scores_stride = n;
  a.q8 = q8;
  std::vector<float> qs(G * hd), s(G * attn::kKeyTile), qk(G * (hd + 1));
  std::vector<float> q8buf(attn::q8_work_bytes(G, hd, rows.group) / 4 + 1);
  const attn::DecodeWork w{qs.data(), s.data(), qk.data(), q8buf.data()};
  std::vector<float> m(G), l(G), acc(G * hd);
  K.decode_block(a, w, m.data(), l.data(), acc.data());
  return scores;
}

std::vector<float> block_scores(const attn::Kernels& K, const Keys& k, const std::vector<float>& q,
                                int G, int hd, bool q8) {
  return block_scores(K, k.rows, k.pos, q, G, hd, q8);
}

// A query with blocks of very different sizes, one block all zero (a zero
// scale) and one element far larger than the rest of its block.
std::vector<float> make_query(int G, int hd, std::mt19937& rng) {
  std::normal_distribution<float> u(0.0f, 1.0f);
  std::vector<float> q(G * hd);
  for (int i = 0; i < G * hd; ++i) q[i] = u(rng) * (1 + i / 16 % 4);
  for (int d = 0; d < std::min(hd, 8); ++d) q[d] = 0.0f;
  q[hd - 1] = 40.0f;
  return q;
}

struct KeyCase {
  CodecKind kind;
  int hd, group;
};

const KeyCase kKeyCases[] = {
    {CodecKind::Int4, 64, 32},  {CodecKind::Int4, 64, 16},  {CodecKind::Int4, 64, 64},
    {CodecKind::Int4, 128, 32}, {CodecKind::Int4, 256, 32}, {CodecKind::Int4, 256, 128},
    {CodecKind::Int4, 32, 32},  {CodecKind::Int8, 64, 32},  {CodecKind::Int8, 64, 16},
    {CodecKind::Int8, 64, 8},   {CodecKind::Int8, 128, 64}, {CodecKind::Int8, 256, 32},
    {CodecKind::Int8, 32, 16},  {CodecKind::Int2, 64, 32},  {CodecKind::Int2, 128, 64},
    {CodecKind::Int2, 256, 32}, {CodecKind::Int4, 512, 32}, {CodecKind::Int8, 512, 32},
    {CodecKind::Int2, 512, 32},
};

std::string name_of(const KeyCase& c, int G, int n, bool indexed) {
  return std::string(codec_name(c.kind)) + " hd " + std::to_string(c.hd) + " group " +
         std::to_string(c.group) + " G " + std::to_string(G) + " keys " + std::to_string(n) +
         (indexed ? " indexed" : "");
}

TEST(AttentionQ8, EveryPathWritesTheScalarScoresBitForBit) {
  const std::vector<Path> paths = kernel_paths();
  uint32_t seed = 1;
  int compared = 0;
  std::vector<int> integer(paths.size(), 0);  // cases a path summed as integers
  for (const KeyCase& c : kKeyCases)
    for (int G : {1, 3, 4})
      for (int n : {1, 5, 64, 67, 300})
        for (bool indexed : {false, true}) {
          std::mt19937 rng(seed++);
          const Keys k = make_keys(c.kind, c.hd, c.group, n, indexed, rng);
          const std::vector<float> q = make_query(G, c.hd, rng);
          const std::vector<float> ref = block_scores(*paths[0].kernels, k, q, G, c.hd, true);
          for (size_t p = 1; p < paths.size(); ++p) {
            const attn::Kernels& K = *paths[p].kernels;
            if (c.hd % K.width != 0 || c.group % K.width != 0) continue;  // never chosen
            const std::vector<float> got = block_scores(K, k, q, G, c.hd, true);
            ASSERT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * 4), 0)
                << name_of(c, G, n, indexed) << " path " << paths[p].name;
            ++compared;
            integer[p] += K.q8_int_sums(kv_element(c.kind), c.hd, c.group);
          }
        }
  if (paths.size() > 1) EXPECT_GT(compared, 300);
  for (size_t p = 1; p < paths.size(); ++p) EXPECT_GT(integer[p], 100) << paths[p].name;
}

// Which keys each path sums as integers (Kernels::q8_int_sums), so the
// bit-for-bit tests know which kernels they compare: AVX2 (vpmaddubsw)
// takes Q8, Q4 and Q2 keys in groups of 32 and whole 64-element spans, and
// K2 keys at head sizes that are multiples of 64; AVX-512 (vpdpbusd) Q8
// and Q4 keys likewise and K2 keys, at head sizes up to 256, and Q2 keys
// by AVX2's kernel; the scalar path none.
TEST(AttentionQ8, IntegerKernelsTakeTheDefaultGroups) {
  using E = KvElement;
  for (const Path& p : kernel_paths()) {
    const attn::Kernels& K = *p.kernels;
    const bool avx2 = p.name == "avx2", avx512 = p.name == "avx512";
    for (int hd : {64, 128, 256}) {
      const std::string what = p.name + " hd " + std::to_string(hd);
      EXPECT_EQ(K.q8_int_sums(E::Q8, hd, 32), avx2 || avx512) << what;
      EXPECT_EQ(K.q8_int_sums(E::Q4, hd, 32), avx2 || avx512) << what;
      EXPECT_EQ(K.q8_int_sums(E::Q2, hd, 32), avx2 || avx512) << what;
      EXPECT_EQ(K.q8_int_sums(E::K2, hd, 32), avx2 || avx512) << what;
      for (E e : {E::Q8, E::Q4, E::Q2}) {
        EXPECT_FALSE(K.q8_int_sums(e, hd, 16)) << what;
        EXPECT_FALSE(K.q8_int_sums(e, hd, 64)) << what;
      }
      EXPECT_FALSE(K.q8_int_sums(E::F32, hd, 32)) << what;
    }
    // AVX2 keeps one span of codes in registers, AVX-512 a whole row: no
    // head-size limit on AVX2, nor for AVX-512's Q2 keys (AVX2's kernel).
    for (E e : {E::Q8, E::Q4, E::K2}) EXPECT_EQ(K.q8_int_sums(e, 512, 32), avx2) << p.name;
    EXPECT_EQ(K.q8_int_sums(E::Q2, 512, 32), avx2 || avx512) << p.name;
    for (E e : {E::Q8, E::Q4, E::Q2, E::K2}) {
      EXPECT_FALSE(K.q8_int_sums(e, 32, 32)) << p.name;
      EXPECT_FALSE(K.q8_int_sums(e, 96, 32)) << p.name;
    }
  }
}

// n keys of type `kind`, head size hd, groups of 32, written byte by byte
// with only the codes' extreme values (Q8: -128, -127, 127, where the codec
// writes [-127, 127] but a row from elsewhere may hold -128; Q4: 0, 15; Q2:
// 0, 3), key j by pattern j % 6: all the lowest, all the highest, the two
// alternating, the lowest and highest in runs of 3, random, and Q8 all
// -127 (Q4 / Q2: the highest and lowest alternating). Parameters: f16
// scales, mins and steps of varied sizes and signs.
Keys make_extreme_keys(CodecKind kind, int hd, int n, std::mt19937& rng) {
  Keys k;
  k.codec = RowCodec(kind, hd, 32);
  const int64_t rb = k.codec.row_bytes();
  const int bits = kind == CodecKind::Int8 ? 8 : kind == CodecKind::Int4 ? 4 : 2;
  const int lo = kind == CodecKind::Int8 ? -128 : 0;
  const int hi = kind == CodecKind::Int8 ? 127 : (1 << bits) - 1;
  k.bytes.assign(n * rb, 0);
  k.decoded.resize(int64_t{n} * hd);
  std::uniform_real_distribution<float> u(0.25f, 2.0f);
  for (int j = 0; j < n; ++j) {
    uint8_t* row = k.bytes.data() + j * rb;
    for (int d = 0; d < hd; ++d) {
      const bool coin = rng() % 2;
      const int last = kind == CodecKind::Int8 ? -127 : (d % 2 ? lo : hi);
      const int pick[6] = {lo, hi, d % 2 ? hi : lo, d / 3 % 2 ? hi : lo, coin ? hi : lo, last};
      const int c = pick[j % 6];
      const int e = d * bits / 8, shift = d * bits % 8;
      row[e] |= static_cast<uint8_t>((c & ((1 << bits) - 1)) << shift);
    }
    uint8_t* params = row + hd * bits / 8;
    for (int b = 0; b < hd / 32; ++b) {
      const float scale = u(rng) * 0.01f;
      if (kind == CodecKind::Int8) {
        const uint16_t h = fp32_to_fp16(scale);
        std::memcpy(params + 2 * b, &h, 2);
      } else {
        const uint16_t h[2] = {fp32_to_fp16((rng() % 2 ? -1.0f : 1.0f) * u(rng)),
                               fp32_to_fp16(scale)};
        std::memcpy(params + 4 * b, h, 4);
      }
    }
    k.codec.decode(row, k.decoded.data() + int64_t{j} * hd);
    k.index.push_back(j);
    k.pos.push_back(j);
  }
  k.rows.type = kv_element(kind);
  k.rows.data = k.bytes.data();
  k.rows.stride = rb;
  k.rows.set_group(32);
  k.rows.n = n;
  return k;
}

// One KV head's pieces may hold different key types with the same group
// (a thread's blocks of one decode call share a q8_tag): the query a path
// ordered for int4 keys must not be reused for int8 ones.
TEST(AttentionQ8, QueryMadeForOneKeyTypeIsNotReusedForAnother) {
  std::mt19937 rng(11);
  const int G = 3, hd = 64, n = 40;
  const std::vector<float> q = make_query(G, hd, rng);
  const Keys k4 = make_keys(CodecKind::Int4, hd, 32, n, false, rng);
  const Keys k8 = make_keys(CodecKind::Int8, hd, 32, n, false, rng);
  for (const Path& p : kernel_paths()) {
    SCOPED_TRACE(p.name);
    // One work area and one tag for both blocks, int4 first.
    std::vector<float> qs(G * hd), s(G * attn::kKeyTile), qk(G * (hd + 1));
    std::vector<float> q8buf(attn::q8_work_bytes(G, hd, 32) / 4 + 1);
    const attn::DecodeWork w{qs.data(), s.data(), qk.data(), q8buf.data()};
    std::vector<float> m(G), l(G), acc(G * hd), shared(int64_t{G} * n, NAN);
    for (const Keys* k : {&k4, &k8}) {
      attn::DecodeBlock a;
      a.q = q.data();
      a.scale = 1.4426950408889634f / std::sqrt(static_cast<float>(hd));
      a.group = G;
      a.head_dim = hd;
      a.k = a.v = k->rows;
      a.pos = k->pos.data();
      a.qpos = n;
      a.begin = 0;
      a.end = n;
      a.scores = shared.data();
      a.scores_stride = n;
      a.q8 = true;
      a.q8_tag = 7;
      p.kernels->decode_block(a, w, m.data(), l.data(), acc.data());
    }
    const std::vector<float> fresh = block_scores(*p.kernels, k8, q, G, hd, true);
    for (size_t i = 0; i < fresh.size(); ++i) ASSERT_EQ(shared[i], fresh[i]) << "score " << i;
  }
}

// The integer kernels' saturation edge: every query code +-127 (each block's
// elements of one magnitude; head g: g % 3 = 0 all positive, 1 all
// negative, 2 random signs) against keys at their extreme codes
// (make_extreme_keys): vpmaddubsw's pairs reach 2 x 128 x 127 = 32512 (Q8),
// 2 x 15 x 127 (Q4), 2 x 3 x 127 (Q2), and every path writes the scalar
// reference's bits.
TEST(AttentionQ8, ExtremeCodesGiveTheScalarScoresBitForBit) {
  const std::vector<Path> paths = kernel_paths();
  uint32_t seed = 300;
  int integer = 0;
  for (CodecKind kind : {CodecKind::Int8, CodecKind::Int4, CodecKind::Int2})
    for (int hd : {64, 128, 256})
      for (int G : {1, 3, 4}) {
        std::mt19937 rng(seed++);
        const int n = 70;  // a tile and a partial one
        const Keys k = make_extreme_keys(kind, hd, n, rng);
        std::vector<float> q(G * hd);
        for (int g = 0; g < G; ++g)
          for (int d = 0; d < hd; ++d) {
            const float sign = g % 3 == 0 ? 1.0f : g % 3 == 1 ? -1.0f : rng() % 2 ? 1.0f : -1.0f;
            q[g * hd + d] = sign * (0.5f + d / 32 % 3);
          }
        // Every code +-127: the quantized query is the query over its scale.
        std::vector<float> qs(q.size());
        const float scale = 1.4426950408889634f / std::sqrt(static_cast<float>(hd));
        for (size_t i = 0; i < q.size(); ++i) qs[i] = q[i] * scale;
        for (int g = 0; g < G; ++g)
          for (int b = 0; b < hd / 32; ++b) {
            const float* x = qs.data() + g * hd + 32 * b;
            const float a = std::fabs(x[0]) / 127.0f;
            for (int i = 0; i < 32; ++i) ASSERT_EQ(std::fabs(std::nearbyint(x[i] / a)), 127.0f);
          }
        const std::string what =
            std::string(codec_name(kind)) + " hd " + std::to_string(hd) + " G " + std::to_string(G);
        const std::vector<float> ref = block_scores(*paths[0].kernels, k, q, G, hd, true);
        for (float x : ref) ASSERT_TRUE(std::isfinite(x)) << what;
        for (size_t p = 1; p < paths.size(); ++p) {
          const attn::Kernels& K = *paths[p].kernels;
          const std::vector<float> got = block_scores(K, k, q, G, hd, true);
          ASSERT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * 4), 0)
              << what << " path " << paths[p].name;
          integer += K.q8_int_sums(kv_element(kind), hd, 32);
        }
      }
  if (paths.size() > 1) EXPECT_GT(integer, 0);
}

TEST(AttentionQ8, EachScoreIsWithinTheQuerysRoundingOfTheF32Score) {
  uint32_t seed = 100;
  double worst_share = 0.0;
  for (const KeyCase& c : kKeyCases)
    for (int G : {1, 3}) {
      std::mt19937 rng(seed++);
      const int n = 150, hd = c.hd;
      const Keys k = make_keys(c.kind, hd, c.group, n, false, rng);
      const std::vector<float> q = make_query(G, hd, rng);
      const attn::Kernels& K = *attn::scalar_kernels();
      const std::vector<float> exact = block_scores(K, k, q, G, hd, false);
      const std::vector<float> q8 = block_scores(K, k, q, G, hd, true);
      const float scale = 1.4426950408889634f / std::sqrt(static_cast<float>(hd));
      double max_err = 0.0;
      for (int g = 0; g < G; ++g)
        for (int j = 0; j < n; ++j) {
          // The code part of each element: k - its block's centre (Q4 / Q2), k (Q8).
          const float* kr = k.decoded.data() + int64_t{j} * hd;
          double bound = 0.0, magnitude = 0.0;
          for (int b = 0; b < hd / c.group; ++b) {
            float amax = 0.0f;
            for (int d = b * c.group; d < (b + 1) * c.group; ++d)
              amax = std::max(amax, std::fabs(q[g * hd + d] * scale));
            const float half = amax / 127.0f / 2.0f;
            for (int d = b * c.group; d < (b + 1) * c.group; ++d) {
              const float code_part = c.kind == CodecKind::Int8
                                          ? std::fabs(kr[d])
                                          : std::fabs(kr[d] - block_centre(k, j, b));
              bound += half * code_part;
              magnitude += std::fabs(q[g * hd + d] * scale * kr[d]);
            }
          }
          const double err = std::fabs(double(q8[g * n + j]) - exact[g * n + j]);
          EXPECT_LE(err, bound + 1e-5 * (magnitude + 1.0))
              << name_of(c, G, n, false) << " head " << g << " key " << j;
          max_err = std::max(max_err, err);
          if (bound > 0) worst_share = std::max(worst_share, err / bound);
        }
      EXPECT_GT(max_err, 0.0) << name_of(c, G, n, false) << ": the option changed nothing";
    }
  EXPECT_GT(worst_share, 0.05);  // the bound is not vacuous
}

// n KIVI keys (K2) of one KV head: tokens encoded per channel in blocks of
// 32 (kivi_encode_key_block), the rows starting `skip` tokens into the
// first block (a piece cut mid-block) and the last block partial; channels
// of very different ranges and offsets (KIVI's outlier channels). With
// `indexed`, row j lives at slot 2j + 1, its codes and params pointer both
// (Rows::index). values: n zero f32 rows.
struct K2Keys {
  std::vector<uint8_t> codes;               // [slots][hd / 4]
  std::vector<uint16_t> params;             // [blocks][2][hd] f16
  std::vector<const uint16_t*> row_params;  // [slots]
  std::vector<int32_t> index, pos;
  std::vector<float> decoded;  // [n][hd]: what KIVI decodes
  std::vector<float> zeros;
  attn::Rows rows, values;
};

K2Keys make_k2_keys(int hd, int n, int skip, bool indexed, std::mt19937& rng) {
  K2Keys k;
  const int row_bytes = hd / 4, slots = indexed ? 2 * n : n;
  const int tokens = n + skip, blocks = (tokens + 31) / 32;
  k.codes.assign(int64_t{slots} * row_bytes, 0);
  k.params.resize(int64_t{blocks} * 2 * hd);
  k.row_params.assign(slots, nullptr);
  k.decoded.resize(int64_t{n} * hd);
  std::normal_distribution<float> u(0.0f, 1.0f);
  std::vector<float> keys(32 * hd);
  std::vector<uint8_t> block_codes(32 * row_bytes);
  for (int b = 0; b < blocks; ++b) {
    const int t0 = 32 * b, nt = std::min(32, tokens - t0);
    for (int t = 0; t < nt; ++t)
      for (int c = 0; c < hd; ++c)
        keys[t * hd + c] = u(rng) * (c % 7 == 0 ? 8.0f : 1.0f) + static_cast<float>(c % 5);
    uint16_t* prm = k.params.data() + int64_t{b} * 2 * hd;
    kivi_encode_key_block(keys.data(), nt, hd, prm, block_codes.data());
    for (int t = std::max(0, skip - t0); t < nt; ++t) {
      const int j = t0 + t - skip, slot = indexed ? 2 * j + 1 : j;
      std::memcpy(k.codes.data() + int64_t{slot} * row_bytes, block_codes.data() + t * row_bytes,
                  row_bytes);
      k.row_params[slot] = prm;
      kivi_decode_key(block_codes.data() + t * row_bytes, prm, hd,
                      k.decoded.data() + int64_t{j} * hd);
    }
  }
  for (int j = 0; j < n; ++j) {
    k.index.push_back(indexed ? 2 * j + 1 : j);
    k.pos.push_back(j);
  }
  k.rows.type = KvElement::K2;
  k.rows.data = k.codes.data();
  k.rows.stride = row_bytes;
  k.rows.index = indexed ? k.index.data() : nullptr;
  k.rows.params = k.row_params.data();
  k.rows.n = n;
  k.zeros.assign(int64_t{n} * hd, 0.0f);
  k.values.type = KvElement::F32;
  k.values.data = reinterpret_cast<const uint8_t*>(k.zeros.data());
  k.values.stride = int64_t{hd} * 4;
  k.values.n = n;
  return k;
}

std::vector<float> k2_scores(const attn::Kernels& K, const K2Keys& k, const std::vector<float>& q,
                             int G, int hd, bool q8) {
  return block_scores(K, k.rows, k.pos, q, G, hd, q8, &k.values);
}

std::string k2_name(int hd, int G, int n, int skip, bool indexed) {
  return "K2 hd " + std::to_string(hd) + " G " + std::to_string(G) + " keys " + std::to_string(n) +
         " skip " + std::to_string(skip) + (indexed ? " indexed" : "");
}

// KIVI's keys: the query is quantized again for each block of tokens, on
// every path the scalar reference's numbers (AVX-512: its own vectorised
// quantization and vpdpbusd, head sizes 64-256; AVX2: likewise with
// vpmaddubsw, head sizes that are multiples of 64; other head sizes and
// the scalar path: the f32 integer sums).
TEST(AttentionQ8, KiviKeysOnEveryPathWriteTheScalarScoresBitForBit) {
  const std::vector<Path> paths = kernel_paths();
  uint32_t seed = 500;
  int compared = 0;
  std::vector<int> integer(paths.size(), 0);  // cases a path summed as integers
  for (int hd : {64, 128, 256, 96, 32, 512})
    for (int G : {1, 3, 4})
      for (int n : {1, 5, 64, 67, 300})
        for (int skip : {0, 13})
          for (bool indexed : {false, true}) {
            std::mt19937 rng(seed++);
            const K2Keys k = make_k2_keys(hd, n, skip, indexed, rng);
            const std::vector<float> q = make_query(G, hd, rng);
            const std::vector<float> ref = k2_scores(*paths[0].kernels, k, q, G, hd, true);
            for (size_t p = 1; p < paths.size(); ++p) {
              const attn::Kernels& K = *paths[p].kernels;
              if (hd % K.width != 0) continue;  // never chosen
              const std::vector<float> got = k2_scores(K, k, q, G, hd, true);
              ASSERT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * 4), 0)
                  << k2_name(hd, G, n, skip, indexed) << " path " << paths[p].name;
              ++compared;
              integer[p] += K.q8_int_sums(KvElement::K2, hd, attn::q8_k2_block(hd));
            }
          }
  if (paths.size() > 1) EXPECT_GT(compared, 300);
  for (size_t p = 1; p < paths.size(); ++p) EXPECT_GT(integer[p], 100) << paths[p].name;
}

// Each K2 score is within its query's rounding of the f32 score: per block b
// of q8_k2_block elements, a_b / 2 x sum |code - 2|, a_b = max |q t| / 127
// (t the channel's step).
TEST(AttentionQ8, KiviKeyScoresAreWithinTheQuerysRoundingOfTheF32Score) {
  uint32_t seed = 900;
  double worst_share = 0.0;
  for (int hd : {64, 128, 96})
    for (int G : {1, 3}) {
      std::mt19937 rng(seed++);
      const int n = 150, skip = 5;
      const K2Keys k = make_k2_keys(hd, n, skip, false, rng);
      const std::vector<float> q = make_query(G, hd, rng);
      const attn::Kernels& K = *attn::scalar_kernels();
      const std::vector<float> exact = k2_scores(K, k, q, G, hd, false);
      const std::vector<float> q8 = k2_scores(K, k, q, G, hd, true);
      const float scale = 1.4426950408889634f / std::sqrt(static_cast<float>(hd));
      const int B = attn::q8_k2_block(hd);
      double max_err = 0.0;
      for (int g = 0; g < G; ++g)
        for (int j = 0; j < n; ++j) {
          const uint16_t* prm = k.row_params[j];
          const uint8_t* codes = k.codes.data() + int64_t{j} * hd / 4;
          double bound = 0.0, magnitude = 0.0;
          for (int b = 0; b < hd / B; ++b) {
            float amax = 0.0f;
            for (int c = b * B; c < (b + 1) * B; ++c)
              amax = std::max(amax, std::fabs(q[g * hd + c] * scale * fp16_to_fp32(prm[hd + c])));
            for (int c = b * B; c < (b + 1) * B; ++c) {
              const int code = (codes[c / 4] >> (2 * (c % 4))) & 3;
              bound += amax / 127.0f / 2.0f * std::abs(code - 2);
              magnitude += std::fabs(q[g * hd + c] * scale * k.decoded[int64_t{j} * hd + c]);
            }
          }
          const double err = std::fabs(double(q8[g * n + j]) - exact[g * n + j]);
          EXPECT_LE(err, bound + 1e-5 * (magnitude + 1.0))
              << k2_name(hd, G, n, skip, false) << " head " << g << " key " << j;
          max_err = std::max(max_err, err);
          if (bound > 0) worst_share = std::max(worst_share, err / bound);
        }
      EXPECT_GT(max_err, 0.0) << k2_name(hd, G, n, skip, false) << ": the option changed nothing";
    }
  EXPECT_GT(worst_share, 0.05);  // the bound is not vacuous
}

// attend() sizes a decode block's int8-query area by the gcd of the view's
// Q8 / Q4 / Q2 groups (head_dim when it has none: a KIVI head whose values
// are all still f32); K2 keys carve it by their own query blocks, so every
// such size must hold that carve too.
TEST(AttentionQ8, WorkAreaHoldsKiviKeysWhateverTheGroups) {
  for (int hd : {32, 64, 96, 128, 256})
    for (int G : {1, 3, 8})
      for (int group : {0, 8, 16, 32, 64, 96, 128, 256}) {
        if (group > hd || (group > 0 && hd % group != 0)) continue;
        const size_t have = attn::q8_work_bytes(G, hd, group);
        const std::string what = "hd " + std::to_string(hd) + " G " + std::to_string(G) +
                                 " group " + std::to_string(group);
        EXPECT_GE(have, attn::q8_carve(nullptr, G, hd, attn::q8_k2_block(hd), nullptr) + 64)
            << what;
        if (group > 0) EXPECT_GE(have, attn::q8_carve(nullptr, G, hd, group, nullptr) + 64) << what;
      }
}

// attend() along `path` with q8_query at 1 and 2 threads (with[0], with[1])
// and without it (plain, 2 threads).
struct Q8Outputs {
  std::vector<float> with[2], plain;
};

Q8Outputs attend_with_and_without(AttentionShape shape, const std::vector<float>& q,
                                  const std::vector<int32_t>& qpos, KvCache& cache, CpuPath path) {
  Q8Outputs o;
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    AttentionScratch scratch;
    scratch.path = path;
    shape.q8_query = true;
    o.with[threads - 1].assign(q.size(), NAN);
    attend(shape, 0, q.data(), qpos, cache, o.with[threads - 1].data(), pool, scratch);
    if (threads == 2) {
      shape.q8_query = false;
      o.plain.assign(q.size(), NAN);
      attend(shape, 0, q.data(), qpos, cache, o.plain.data(), pool, scratch);
    }
  }
  return o;
}

// Through attend(): a policy cache's layouts (quantized main rows, the open
// step's f32 rows, restored pages), decode with q8_query against exact
// attention; prefill ignores the option.
TEST(AttentionQ8, AttendDecodesNearExactAndLeavesPrefillAlone) {
  using test::Addr;
  const std::vector<std::vector<test::PieceSpec>> layouts = {
      {{CodecKind::Int4, 32, Addr::Plain, 400}},
      {{CodecKind::Int8, 32, Addr::Plain, 250}, {CodecKind::F32, 0, Addr::Plain, 3}},
      {{CodecKind::Int4, 32, Addr::Index, 200}, {CodecKind::Int4, 32, Addr::IndexPtrs, 90}},
      {{CodecKind::Int2, 32, Addr::Ptrs, 130}},
  };
  for (size_t li = 0; li < layouts.size(); ++li) {
    test::PieceCache cache(3, 9, 64);
    std::mt19937 rng(7 + li);
    int32_t at = 0;
    for (int h = 0; h < 3; ++h) cache.set_head(h, layouts[li], rng, at);
    cache.request = {true, -1, false};
    AttentionShape shape{9, 3, 64};
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int n_tokens : {1, 7}) {
      std::vector<float> q(int64_t{n_tokens} * 9 * 64);
      for (auto& x : q) x = u(rng) * 3.0f;
      std::vector<int32_t> qpos(n_tokens);
      for (int t = 0; t < n_tokens; ++t) qpos[t] = at + t;
      std::vector<float> naive(q.size());
      attend_naive(shape, 0, q.data(), qpos, cache, naive.data());
      for (CpuPath path : test::supported_paths()) {
        const Q8Outputs o = attend_with_and_without(shape, q, qpos, cache, path);
        const auto& out = o.with;
        const auto& plain = o.plain;
        const std::string what = "layout " + std::to_string(li) + " tokens " +
                                 std::to_string(n_tokens) + " path " +
                                 std::string(cpu_path_name(path));
        EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), q.size() * 4), 0) << what;
        const float d_naive = test::max_abs_diff(out[0].data(), naive.data(), q.size());
        const float d_plain = test::max_abs_diff(out[0].data(), plain.data(), q.size());
        if (n_tokens == 1) {
          EXPECT_LE(d_naive, 0.02f) << what;
          EXPECT_GT(d_plain, 0.0f) << what << ": decode ignored q8_query";
        } else {
          EXPECT_EQ(d_plain, 0.0f) << what << ": prefill changed";
        }
      }
    }
  }
}

// The policy caches' own layouts through attend(): quantized main rows and
// the open step's f32 rows, a second sequence reading a subset, KIVI's cut
// pieces (per-channel K2 keys and per-token Q2 keys).
TEST(AttentionQ8, PolicyCachesDecodeNearExactWithTheOptionOn) {
  const KvShape shape{1, 2, 6, 64};
  const AttentionShape ashape{6, 2, 64};
  for (const char* spec : {"full+int8", "full+int4", "full+int4:group=16", "full+kivi2:residual=32",
                           "full+kivi2:group=16,residual=32,keys=token", "full+mixed:full=0.5"}) {
    CacheContext cc;
    cc.shape = shape;
    cc.rope.n_dims = 64;
    cc.context_tokens = 512;
    auto cache = PolicyCache::create(parse_policy_spec(spec), cc);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const int n_ctx = 300;
    for (int t0 = 0; t0 < n_ctx; t0 += 50) {
      std::vector<int32_t> pos(50), tok(50, 1);
      for (int i = 0; i < 50; ++i) pos[i] = t0 + i;
      std::vector<float> k(50 * 2 * 64), v(k.size());
      for (auto& x : k) x = u(rng);
      for (auto& x : v) x = u(rng);
      cache->begin_step({0, StepPhase::Prefill, pos, tok});
      cache->append(0, k.data(), v.data());
      cache->end_step();
    }
    cache->seq_cp(0, 1, 40, -1);
    for (int seq : {0, 1}) {
      std::vector<int32_t> qpos{n_ctx}, tok{1};
      std::vector<float> q(6 * 64), kn(2 * 64), vn(2 * 64);
      for (auto& x : q) x = 3.0f * u(rng);
      for (auto& x : kn) x = u(rng);
      for (auto& x : vn) x = u(rng);
      auto clone = cache->clone();
      clone->begin_step({seq, StepPhase::Decode, qpos, tok});
      clone->append(0, kn.data(), vn.data());
      std::vector<float> ref(q.size());
      attend_naive(ashape, 0, q.data(), qpos, *clone, ref.data());
      for (CpuPath path : test::supported_paths()) {
        const Q8Outputs o = attend_with_and_without(ashape, q, qpos, *clone, path);
        const auto& out = o.with;
        const auto& plain = o.plain;
        const std::string what = std::string(spec) + " sequence " + std::to_string(seq) + " path " +
                                 std::string(cpu_path_name(path));
        EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), q.size() * 4), 0) << what;
        EXPECT_LE(test::max_abs_diff(out[0].data(), ref.data(), q.size()), 0.02f) << what;
        const float moved = test::max_abs_diff(out[0].data(), plain.data(), q.size());
        EXPECT_GT(moved, 0.0f) << what << ": decode ignored q8_query";
      }
      clone->end_step();
    }
  }
}

}  // namespace
}  // namespace kvbench
