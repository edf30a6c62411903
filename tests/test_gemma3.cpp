// Gemma 3 on the tiny gemma3 model (always): its hyper-parameters and load
// errors, the ops it adds (GELU-tanh, NEOX RoPE) against scalar formulas, and
// the forward pass (exact and 8-bit activations, one chunk, chunks, cached
// decode past the sliding window) against the naive double-precision
// reference of tests/support/reference_gemma3.cpp. Agreement with llama.cpp
// on the real Gemma 3 270M is in test_golden_gemma3.cpp.
#include <gtest/gtest.h>
#include <cstring>
#include <vector>

#include <cmath>
#include <numeric>

#include "model/common/error.h"
#include "model/evaluator.h"
#include "model/gguf/gguf_writer.h"
#include "model/llama_model.h"
#include "model/ops/gelu.h"
#include "model/ops/rope.h"
#include "model/testing/tiny_model.h"
#include "policies/full_cache.h"
#include "tests/support/cli_run.h"
#include "tests/support/decode_check.h"
#include "tests/support/edited_model.h"
#include "tests/support/input_error.h"
#include "tests/support/reference_gemma3.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

using test::iota_positions;
using test::max_abs_diff;
using test::some_tokens;

TEST(Gemma3Config, TinyModelHyperParameters) {
  auto m = LlamaModel::load(test::tiny_gemma3_path());
  const LlamaConfig& c = m->config();
  EXPECT_EQ(c.arch_name, "gemma3");
  EXPECT_EQ(c.head_dim, TinyGemma3Shape::head_dim);
  EXPECT_EQ(c.q_dim(), TinyModelShape::n_heads * TinyGemma3Shape::head_dim);
  EXPECT_TRUE(c.rope.neox);
  EXPECT_EQ(c.rope.n_dims, c.head_dim);
  EXPECT_EQ(c.rope.freq_base, TinyGemma3Shape::rope_base);
  // Every norm a block can have, and GeGLU.
  EXPECT_TRUE(c.norms.pre_attention && c.norms.qk && c.norms.post_attention);
  EXPECT_TRUE(c.norms.pre_ffn && c.norms.post_ffn);
  EXPECT_EQ(c.activation, Activation::GeluTanh);
  EXPECT_EQ(c.local, (std::vector<bool>{true, true, false}));  // pattern 3: every third is global
  EXPECT_EQ(c.sliding_window, TinyGemma3Shape::sliding_window);
  EXPECT_EQ(c.rope_local.freq_base, 10000.0f);  // llama.cpp's default for local layers
  EXPECT_FLOAT_EQ(c.attn_scale, 1.0f / std::sqrt(32.0f));
  EXPECT_FLOAT_EQ(c.embed_scale, std::sqrt(static_cast<float>(TinyModelShape::dim)));
  EXPECT_EQ(c.final_logit_softcap, TinyGemma3Shape::softcap);
  EXPECT_EQ(m->weights().layers[0].q_norm.size(), static_cast<size_t>(c.head_dim));
  EXPECT_EQ(m->weights().layers[2].ffn_post_norm.size(), static_cast<size_t>(c.dim));
}

// The tiny gemma3 file with `key` dropped and tensor `tensor` left out.
std::string edited(const std::string& name, const std::string& key, const std::string& tensor) {
  TinyModelOptions o;
  o.vocab = TinyVocabKind::Spm;
  o.arch = TinyArch::Gemma3;
  return test::edited_model(
      name,
      {[&](const std::string& k, GgufValue&) { return k != key; },
       [&](const GgufTensor& t, GgmlType&, std::vector<int64_t>&) { return t.name != tensor; }},
      o);
}

std::string load_error(const std::string& path) {
  return test::input_error_of([&] { LlamaModel::load(path); });
}

// A gemma3 file without a chat template (as Gemma 3 270M's) gets Gemma's turns.
TEST(Gemma3Config, NoChatTemplateMeansGemmaTurns) {
  auto m = LlamaModel::load(edited("gemma3-no-template", "tokenizer.chat_template", ""));
  EXPECT_EQ(m->chat_template().name(), "gemma");
  EXPECT_EQ(m->chat_template().apply({{"user", "Hi"}}, true),
            "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
}

TEST(Gemma3Config, MissingKeysAndTensorsAreNamed) {
  for (const std::string key : {"gemma3.block_count", "gemma3.embedding_length",
                                "gemma3.attention.head_count", "gemma3.context_length"}) {
    const std::string err = load_error(edited("gemma3-missing-key", key, ""));
    EXPECT_NE(err.find("gemma3-missing-key.gguf: missing key '" + key + "'"), std::string::npos)
        << err;
  }
  for (const std::string tensor :
       {"blk.1.attn_q_norm.weight", "blk.0.attn_k_norm.weight", "blk.2.post_attention_norm.weight",
        "blk.1.post_ffw_norm.weight"}) {
    const std::string err = load_error(edited("gemma3-missing-tensor", "", tensor));
    EXPECT_NE(err.find("missing tensor '" + tensor + "'"), std::string::npos) << err;
  }
  // Without the sliding window every layer is global.
  auto m = LlamaModel::load(edited("gemma3-no-window", "gemma3.attention.sliding_window", ""));
  EXPECT_EQ(m->config().local, (std::vector<bool>{false, false, false}));
}

TEST(Gemma3Ops, GeluTanhMatchesTheDoubleFormula) {
  float worst = 0.0f;
  for (int i = -2400; i <= 2400; ++i) {
    const double x = i / 200.0;
    const double want =
        0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    worst = std::max(worst, static_cast<float>(std::fabs(gelu_tanh(static_cast<float>(x)) - want)));
  }
  EXPECT_LE(worst, 2e-6f);
  EXPECT_EQ(gelu_tanh(0.0f), 0.0f);
  EXPECT_NEAR(gelu_tanh(1.0f), 0.841192, 1e-6);  // gelu_pytorch_tanh(1)
  float gate[3] = {-1.0f, 0.5f, 2.0f};
  const float up[3] = {2.0f, -1.0f, 3.0f};
  geglu(gate, up, 3);
  EXPECT_EQ(gate[2], gelu_tanh_fast(2.0f) * 3.0f);
  EXPECT_NEAR(gate[0], gelu_tanh(-1.0f) * 2.0f, 1e-6f);
}

// The vectorizable GELU of geglu() against the std::tanh reference and the
// double formula, over the whole float range that matters (|x| <= 24 every
// 1/512, beyond which gelu is 0 or x) and at the extremes.
TEST(Gemma3Ops, FastGeluMatchesTheReference) {
  float worst_rel = 0.0f, worst_abs = 0.0f;
  for (int i = -24 * 512; i <= 24 * 512; ++i) {
    const float x = static_cast<float>(i) / 512.0f;
    const double xd = x;
    const double want =
        0.5 * xd * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (xd + 0.044715 * xd * xd * xd)));
    const float fast = gelu_tanh_fast(x);
    worst_abs = std::max(worst_abs, static_cast<float>(std::fabs(fast - want)));
    if (std::fabs(want) > 1e-3)
      worst_rel = std::max(worst_rel, static_cast<float>(std::fabs(fast - want) / std::fabs(want)));
    ASSERT_LE(std::fabs(fast - gelu_tanh(x)), 2e-6f * std::max(1.0f, std::fabs(x))) << x;
  }
  EXPECT_LE(worst_abs, 2e-6f);
  EXPECT_LE(worst_rel, 1e-6f);  // about 8 ulp
  EXPECT_EQ(gelu_tanh_fast(0.0f), 0.0f);
  EXPECT_EQ(gelu_tanh_fast(1e30f), 1e30f);
  // exp is clamped at 88, so far left gelu is x / 1.65e38 instead of -0.
  EXPECT_LE(std::fabs(gelu_tanh_fast(-1e30f)), 1e-8f);
  EXPECT_EQ(gelu_tanh_fast(200.0f), 200.0f);
  EXPECT_LE(std::fabs(gelu_tanh_fast(-200.0f)), 1e-30f);
  // Every path's geglu gives the scalar loop's bits (16-lane body and tail),
  // NaN and the clamped extremes included.
  std::vector<float> xs;
  for (int i = -24 * 64; i <= 24 * 64; ++i) xs.push_back(static_cast<float>(i) / 64.0f + 1e-3f);
  for (float v : {0.0f, -0.0f, 1e30f, -1e30f, 200.0f, -200.0f, std::nanf(""), 1e-40f})
    xs.push_back(v);
  std::vector<float> ups(xs.size());
  for (size_t i = 0; i < ups.size(); ++i) ups[i] = 0.5f + static_cast<float>(i % 7) * 0.25f;
  std::vector<float> want = xs;
  geglu(want.data(), ups.data(), static_cast<int64_t>(want.size()), CpuPath::Scalar);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_TRUE(std::isnan(want[i]) || want[i] == gelu_tanh_fast(xs[i]) * ups[i]) << xs[i];
  for (CpuPath p : {CpuPath::Avx2, CpuPath::Avx512}) {
    if (!cpu_path_supported(p)) continue;
    std::vector<float> got = xs;
    geglu(got.data(), ups.data(), static_cast<int64_t>(got.size()), p);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(std::memcmp(&want[i], &got[i], 4), 0)
          << cpu_path_name(p) << " x = " << xs[i] << ": " << want[i] << " vs " << got[i];
  }
  // exp over its clamped range, against the library to a few ulp.
  for (float y = -87.0f; y <= 88.0f; y += 0.0625f) {
    const float e = std::exp(y);
    ASSERT_LE(std::fabs(exp_bounded(y) - e), 3e-7f * e) << y;
  }
}

// NEOX RoPE turns element i with element i + d/2; checked against the
// formula in double, and against the pair-wise form on halves interleaved.
TEST(Gemma3Ops, NeoxRopeRotatesHalves) {
  const int d = 16, n_vectors = 3;
  RopeConfig r;
  r.n_dims = d;
  r.freq_base = 10000.0f;
  const auto inv = rope_inv_freq(r);
  std::vector<float> x(n_vectors * d);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * i + 1.0);
  for (int64_t pos : {0, 1, 7, 511, 32767}) {
    std::vector<float> neox = x, pairs(x.size());
    rope_rotate_neox(neox.data(), n_vectors, d, pos, inv);
    for (int v = 0; v < n_vectors; ++v)
      for (int i = 0; i < d / 2; ++i) {
        const double a = pos * std::pow(10000.0, -2.0 * i / d);
        const double x0 = x[v * d + i], x1 = x[v * d + i + d / 2];
        EXPECT_NEAR(neox[v * d + i], x0 * std::cos(a) - x1 * std::sin(a), 2e-3) << pos;
        EXPECT_NEAR(neox[v * d + i + d / 2], x0 * std::sin(a) + x1 * std::cos(a), 2e-3) << pos;
        pairs[v * d + 2 * i] = x0;
        pairs[v * d + 2 * i + 1] = x1;
      }
    rope_rotate(pairs.data(), n_vectors, d, pos, inv);
    for (int v = 0; v < n_vectors; ++v)
      for (int i = 0; i < d / 2; ++i) {
        EXPECT_EQ(neox[v * d + i], pairs[v * d + 2 * i]);
        EXPECT_EQ(neox[v * d + i + d / 2], pairs[v * d + 2 * i + 1]);
      }
  }
}

// 20 tokens: the local layers' window (5) slides over most of them.
TEST(Gemma3Forward, MatchesNaiveReferenceInOneChunkAndInChunks) {
  auto model = LlamaModel::load(test::tiny_gemma3_path());
  const int nv = model->config().n_vocab;
  const auto tokens = some_tokens(20, nv, 7);
  std::vector<int64_t> at(tokens.size());
  std::iota(at.begin(), at.end(), 0);
  const auto ref = test::ReferenceGemma3(*model).logits(tokens, at);
  for (int chunk : {20, 1, 3, 7}) {
    const auto fast = test::logits_at_every_position(*model, tokens, chunk);
    const float diff = max_abs_diff(fast.data(), ref.data(), ref.size());
    if (chunk == 20) RecordProperty("max_abs_logit_diff", std::to_string(diff));
    EXPECT_LE(diff, 1e-3f) << "chunk " << chunk;
  }
  // Not degenerate: logits vary, and the soft-cap bounds them.
  const auto [lo, hi] = std::minmax_element(ref.begin(), ref.end());
  EXPECT_GT(*hi - *lo, 1.0f);
  EXPECT_LT(*hi, TinyGemma3Shape::softcap);
  EXPECT_GT(*lo, -TinyGemma3Shape::softcap);
  // The layer pattern matters: the same file with every layer global (the
  // file's RoPE base and no window everywhere) gives other logits.
  auto wide = LlamaModel::load(edited("gemma3-no-window", "gemma3.attention.sliding_window", ""));
  const auto global = test::logits_at_every_position(*wide, tokens, 20);
  EXPECT_GT(max_abs_diff(global.data() + 10 * nv, ref.data() + 10 * nv, 10 * nv), 1e-2f);
}

TEST(Gemma3Forward, CachedDecodeMatchesRecomputePastTheWindow) {
  auto model = LlamaModel::load(test::tiny_gemma3_path());
  EXPECT_LE(test::check_decode_from_random_prompt<test::ReferenceGemma3>(*model, 4, 12).worst,
            1e-3f);
}

// 8-bit activations (the --fast path: every weight type of the file has a
// quantized kernel) stay near the exact logits.
TEST(Gemma3Forward, QuantizedActivationsStayNearExact) {
  auto model = LlamaModel::load(test::tiny_gemma3_path());
  const auto tokens = some_tokens(20, model->config().n_vocab, 5);
  const auto exact = test::logits_at_every_position(*model, tokens, 20);
  const auto fast = test::logits_at_every_position(*model, tokens, 20, MatmulMode::Quantized);
  const float diff = max_abs_diff(exact.data(), fast.data(), exact.size());
  RecordProperty("max_abs_logit_diff_quantized", std::to_string(diff));
  EXPECT_GT(diff, 0.0f);
  EXPECT_LT(diff, 0.1f);
}

// The command line runs a gemma3 file like any other: StreamingLLM's
// contiguous positions re-rotate its keys in halves, expected attention
// models each layer's RoPE (halves, a base per layer kind).
TEST(Gemma3Cli, TinyGemma3RunsPolicies) {
  const std::string path = testing::TempDir() + "kvbench-cli-tiny-gemma3.gguf";
  ASSERT_EQ(test::run_kvbench("tiny-model -o " + path + " --shape tiny-gemma3 --vocab spm").code,
            0);
  const auto info = test::run_kvbench("info --model " + path);
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("gemma3: 2 local layers (sliding window 5, rope base 10000), global "
                          "layers 2; attention scale 0.176777, embedding scale 9.79796, logit "
                          "soft-cap 4\n"),
            std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("rope pairs: halves (neox)"), std::string::npos);
  for (const char* policy :
       {"streaming:budget=6,sinks=2", "streaming:budget=6,sinks=2,pos=contiguous",
        "h2o:budget=6,layers=global", "snapkv:budget=6,window=2,layers=local",
        "expected:budget=6,sinks=1", "expected:budget=6,sinks=1,layers=local"}) {
    const auto gen = test::run_kvbench(
        "generate --prompt 'hello world hello world hello' "
        "--max-tokens 6 --policy " +
        std::string(policy) + " --model " + path);
    EXPECT_EQ(gen.code, 0) << policy << ": " << gen.err;
    EXPECT_FALSE(gen.out.empty()) << policy;
  }
}

}  // namespace
}  // namespace kvbench
