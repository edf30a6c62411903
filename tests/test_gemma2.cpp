// Gemma 2 (general.architecture "gemma2") on tiny random-weight files of its
// own: what the loader reads (llama.cpp's defaults: every other layer local,
// attention soft-cap 50 and final soft-cap 30 unless stated, the output tied
// to token_embd), its errors, and the forward pass against the naive
// double-precision reference (tests/support/reference_gemma3.cpp, which caps
// the scores) at GQA 1, 2 and 7 and head dimensions 32 to 256 in the weight
// types Gemma 2 ships. Agreement with llama.cpp on the same files:
// test_golden_architectures.cpp; the capped attention kernels on every
// path: test_attention.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "harness/inference.h"
#include "model/llama_model.h"
#include "model/testing/tiny_model.h"
#include "tests/support/cli_run.h"
#include "tests/support/decode_check.h"
#include "tests/support/edited_model.h"
#include "tests/support/input_error.h"
#include "tests/support/reference_gemma3.h"
#include "tests/support/reference_llama.h"
#include "tests/support/tiny_shapes.h"

namespace kvbench {
namespace {

using test::max_abs_diff;
using test::some_tokens;

using Shape = test::TinyShape;
// GQA 2 at heads of 128 and of 256 (Gemma 2 2B and 9B's head size), GQA 7,
// GQA 1, and the tests' gemma shape (6 heads of 32 over 2 KV heads in 96).
constexpr Shape kShapes[] = {
    {256, 4, 2, 128}, {256, 2, 1, 256}, {896, 7, 1, 128}, {256, 4, 4, 64}, {0, 0, 0, 0}};

std::string tiny_path(const Shape& s, TinyWeights w) {
  return test::write_shaped_tiny(test::shaped_tiny_options(TinyArch::Gemma2, s, w), "gemma2");
}

std::string load_error(const std::string& path) {
  return test::input_error_of([&] { LlamaModel::load(path); });
}

TEST(Gemma2Config, ReadsCapsWindowAndLayerPatternAsLlamaCpp) {
  auto m = LlamaModel::load(test::tiny_arch_path(TinyArch::Gemma2));
  const LlamaConfig& c = m->config();
  EXPECT_EQ(c.arch_name, "gemma2");
  EXPECT_TRUE(c.rope.neox);
  EXPECT_FALSE(c.norms.qk);
  EXPECT_TRUE(c.norms.post_attention);
  EXPECT_TRUE(c.norms.post_ffn);
  EXPECT_EQ(c.activation, Activation::GeluTanh);
  EXPECT_FLOAT_EQ(c.attn_logit_softcap, TinyGemma2Shape::attn_softcap);
  EXPECT_FLOAT_EQ(c.final_logit_softcap, TinyGemma3Shape::softcap);
  EXPECT_EQ(c.sliding_window, TinyGemma3Shape::sliding_window);
  // No pattern key: every other layer local, from layer 0.
  EXPECT_TRUE(c.is_local(0));
  EXPECT_FALSE(c.is_local(1));
  EXPECT_TRUE(c.is_local(2));
  EXPECT_FLOAT_EQ(c.rope_local.freq_base, c.rope.freq_base);
  EXPECT_FLOAT_EQ(c.attn_scale, 1.0f / std::sqrt(static_cast<float>(c.head_dim)));
  EXPECT_FLOAT_EQ(c.embed_scale, std::sqrt(static_cast<float>(c.dim)));
  EXPECT_TRUE(m->weights().tied_output);
  for (const LayerWeights& L : m->weights().layers) EXPECT_TRUE(L.q_norm.empty());
  // Its caches know its attention: a part that recomputes what the model
  // pays an entry (offload's restore by importance) caps and scales as it.
  const CacheContext cc = cache_context(*m, 0);
  EXPECT_EQ(cc.attn_softcap, c.attn_logit_softcap);
  EXPECT_EQ(cc.attn_scale, c.attn_scale);
}

TEST(Gemma2Config, DefaultsAndBadCapsAreAsLlamaCppReadsThem) {
  TinyModelOptions o;
  o.arch = TinyArch::Gemma2;
  auto without = [&](const std::string& name, std::vector<std::string> keys) {
    return test::edited_model(name,
                              {[=](const std::string& k, GgufValue&) {
                                 return std::find(keys.begin(), keys.end(), k) == keys.end();
                               },
                               {}},
                              o);
  };
  // Unstated: llama.cpp's 50, 30 and window 4096.
  auto m = LlamaModel::load(
      without("gemma2-defaults", {"gemma2.attn_logit_softcapping", "gemma2.final_logit_softcapping",
                                  "gemma2.attention.sliding_window"}));
  EXPECT_FLOAT_EQ(m->config().attn_logit_softcap, 50.0f);
  EXPECT_FLOAT_EQ(m->config().final_logit_softcap, 30.0f);
  EXPECT_EQ(m->config().sliding_window, 4096);
  // llama.cpp divides by the caps: zero, negative or NaN is refused.
  for (float bad : {0.0f, -2.0f, NAN}) {
    const std::string err =
        load_error(test::edited_model("gemma2-bad-cap",
                                      {[=](const std::string& k, GgufValue& v) {
                                         if (k == "gemma2.attn_logit_softcapping")
                                           v.data = static_cast<double>(bad);
                                         return true;
                                       },
                                       {}},
                                      o));
    EXPECT_NE(err.find("gemma2.attn_logit_softcapping must be > 0"), std::string::npos) << err;
  }
  const std::string untied = test::input_error_of([] {
    TinyModelOptions u;
    u.arch = TinyArch::Gemma2;
    u.tied_output = false;
    make_tiny_model(u);
  });
  EXPECT_NE(untied.find("gemma2 ties its output"), std::string::npos) << untied;
}

// Every shape in every type Gemma 2 ships: exact forward against the
// reference (one chunk and chunks smaller than the window), 8-bit
// activations near it. The prompts are longer than the window (5), and the
// attention cap (3) bites on these scores.
TEST(Gemma2Forward, MatchesNaiveReferenceAtEveryShapeAndType) {
  const TinyWeights types[] = {TinyWeights::F16,    TinyWeights::BF16, TinyWeights::Q8_0,
                               TinyWeights::Q4_0,   TinyWeights::Q6_K, TinyWeights::Q4_K_M,
                               TinyWeights::Q5_K_M, TinyWeights::Mixed};
  for (const Shape& s : kShapes) {
    for (TinyWeights w : types) {
      const std::string what = "gemma2 " + std::to_string(s.heads) + "/" +
                               std::to_string(s.kv_heads) + "x" + std::to_string(s.head_dim) + " " +
                               std::string(tiny_weights_name(w));
      auto model = LlamaModel::load(tiny_path(s, w));
      test::expect_forward_matches_reference<test::ReferenceGemma3>(*model, what, 4, 0.08f);
    }
  }
}

TEST(Gemma2Forward, CachedDecodeMatchesRecompute) {
  auto model = LlamaModel::load(tiny_path(kShapes[0], TinyWeights::Q8_0));
  EXPECT_LE(test::check_decode_from_random_prompt<test::ReferenceGemma3>(*model, 5, 10).worst,
            1e-3f);
}

TEST(Gemma2Cli, TinyFilesRunPolicies) {
  const std::string path = testing::TempDir() + "kvbench-cli-tiny-gemma2.gguf";
  const auto w = test::run_kvbench("tiny-model -o " + path +
                                   " --arch gemma2 --weights q4_k_m --dim 256 --heads 4 "
                                   "--kv-heads 2 --head-dim 128 --ffn 512");
  ASSERT_EQ(w.code, 0) << w.err;
  const auto info = test::run_kvbench("info --model " + path);
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("gemma2: 2 local layers (sliding window 5, rope base 10000), global "
                          "layers 1; attention scale 0.0883883, embedding scale 16, logit "
                          "soft-cap 4, attention soft-cap 3"),
            std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("block: pre-norms, post-norms, GeGLU"), std::string::npos) << info.out;
  for (const char* policy : {"full", "snapkv:budget=6,window=2", "h2o:budget=6", "tova:budget=6",
                             "expected:budget=6,sinks=1", "full+kivi2", "quest:budget=6"}) {
    const auto gen = test::run_kvbench(
        "generate --prompt 'hello world hello world hello' --max-tokens 6 --policy " +
        std::string(policy) + " --model " + path);
    EXPECT_EQ(gen.code, 0) << policy << ": " << gen.err;
  }
}

}  // namespace
}  // namespace kvbench
