// Phi-3 (general.architecture "phi3": Phi-3, Phi-3.5, Phi-4-mini) and
// Mistral-style llama files on tiny random-weight files of their own: what
// the loader reads (fused tensors taken apart, LongRoPE's factors and
// attention factor, a stated sliding window not applied, as llama.cpp runs
// these files), its errors, and the forward pass against the naive
// double-precision reference (tests/support/reference_llama.cpp) at GQA 1,
// 2 and 7 and head dimensions 16 to 128 (Phi-3's 96 too) in the weight
// types the families ship. Agreement with llama.cpp on the same files:
// test_golden_architectures.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "model/llama_model.h"
#include "model/testing/tiny_model.h"
#include "tests/support/cli_run.h"
#include "tests/support/decode_check.h"
#include "tests/support/edited_model.h"
#include "tests/support/input_error.h"
#include "tests/support/reference_llama.h"
#include "tests/support/tiny_shapes.h"

namespace kvbench {
namespace {

using test::max_abs_diff;
using test::some_tokens;

using Shape = test::TinyShape;
// llama.cpp's phi3 loader requires heads x head_dim = width (attn_output is
// [dim][dim]). Phi-3 and Phi-3.5-mini have heads of 96 (32 of them, no GQA).
constexpr Shape kShapes[] = {
    {256, 4, 4, 64}, {320, 4, 2, 80}, {896, 7, 1, 128}, {384, 4, 4, 96}, {0, 0, 0, 0}};

TinyModelOptions options(TinyArch arch, const Shape& s, TinyWeights w) {
  return test::shaped_tiny_options(arch, s, w);
}

std::string tiny_path(const TinyModelOptions& o, const std::string& tag) {
  return test::write_shaped_tiny(o, tag);
}

std::string load_error(const std::string& path) {
  return test::input_error_of([&] { LlamaModel::load(path); });
}

TEST(Phi3Config, FusedTensorsAreTakenApartIntoAdjacentRowViews) {
  auto m = LlamaModel::load(
      tiny_path(options(TinyArch::Phi3, kShapes[1], TinyWeights::Q8_0), "phi3-config"));
  const LlamaConfig& c = m->config();
  EXPECT_EQ(c.arch_name, "phi3");
  EXPECT_TRUE(c.rope.neox);
  EXPECT_TRUE(c.fused_gate_up);
  EXPECT_EQ(c.kv_mul(), 2);
  for (const LayerWeights& L : m->weights().layers) {
    // attn_qkv [320 + 2 * 160][320]: q's rows, then k's, then v's.
    EXPECT_EQ(L.wq.rows, 320);
    EXPECT_EQ(L.wk.rows, 160);
    EXPECT_EQ(L.wv.rows, 160);
    EXPECT_EQ(L.wk.data, L.wq.data + 320 * L.wq.row_bytes);
    EXPECT_EQ(L.wv.data, L.wk.data + 160 * L.wk.row_bytes);
    // ffn_up [2 * 512][320]: the gate's rows first.
    EXPECT_EQ(L.w_gate.rows, 512);
    EXPECT_EQ(L.w_up.rows, 512);
    EXPECT_EQ(L.w_up.data, L.w_gate.data + 512 * L.w_gate.row_bytes);
    EXPECT_EQ(L.w_gate.type, L.w_up.type);
  }
}

TEST(Phi3Config, LongRopeAndTheStatedWindowAreReadAsLlamaCppReadsThem) {
  auto m = LlamaModel::load(test::tiny_arch_path(TinyArch::Phi3));
  const LlamaConfig& c = m->config();
  // Loaded without a context: the short factors are the ones applied
  // (llama.cpp's choice at a context up to the original one).
  ASSERT_EQ(c.rope.freq_factors.size(), static_cast<size_t>(c.head_dim / 2));
  ASSERT_EQ(c.rope_long_factors.size(), c.rope.freq_factors.size());
  for (float f : c.rope.freq_factors) {
    EXPECT_GE(f, 1.0f);
    EXPECT_LT(f, 2.5f);
  }
  EXPECT_NE(c.rope.freq_factors, c.rope_long_factors);
  EXPECT_FALSE(c.rope_long_active);
  EXPECT_FLOAT_EQ(c.rope.attn_factor, TinyPhi3Shape::attn_factor);
  EXPECT_EQ(c.n_ctx_orig, TinyPhi3Shape::original_context);
  // Stated, not applied: every layer global.
  EXPECT_EQ(c.unapplied_sliding_window, TinyPhi3Shape::sliding_window);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_FALSE(c.has_local_layers());
}

// llama.cpp takes the long factors when its context per sequence exceeds
// the original context (llama_model::get_rope_factors); so does a model
// loaded for such a context, and nothing else changes. Agreement with
// llama.cpp run at such a context: test_golden_architectures.cpp
// ("phi3-long").
TEST(Phi3Config, LongFactorsBeyondTheOriginalContext) {
  const std::string path = test::tiny_arch_path(TinyArch::Phi3);
  const int64_t orig = TinyPhi3Shape::original_context;
  auto short_model = LlamaModel::load(path, true, orig);
  auto long_model = LlamaModel::load(path, true, orig + 1);
  const LlamaConfig& s = short_model->config();
  const LlamaConfig& l = long_model->config();
  EXPECT_FALSE(s.rope_long_active);
  EXPECT_TRUE(l.rope_long_active);
  EXPECT_EQ(l.rope.freq_factors, s.rope_long_factors);
  EXPECT_EQ(l.rope_long_factors, s.rope_long_factors);
  EXPECT_NE(l.rope.freq_factors, s.rope.freq_factors);
  EXPECT_FLOAT_EQ(l.rope.attn_factor, s.rope.attn_factor);
  // Which side of the original context a model was loaded for.
  EXPECT_TRUE(short_model->fits_context(0));
  EXPECT_TRUE(short_model->fits_context(orig));
  EXPECT_FALSE(short_model->fits_context(orig + 1));
  EXPECT_TRUE(long_model->fits_context(orig + 1));
  EXPECT_FALSE(long_model->fits_context(orig));
  // What the commands do after tokenizing: load again only across the line.
  auto reloaded = LlamaModel::load(path, true, orig);
  LlamaModel::reload_for_context(reloaded, orig);
  EXPECT_FALSE(reloaded->config().rope_long_active);
  LlamaModel::reload_for_context(reloaded, orig + 1);
  EXPECT_TRUE(reloaded->config().rope_long_active);
  // The factors reach the forward pass: other logits after a few positions,
  // and the long model still matches the naive reference (which reads its
  // config).
  const auto tokens = some_tokens(9, l.n_vocab, 3);
  std::vector<int64_t> at(tokens.size());
  std::iota(at.begin(), at.end(), 0);
  const auto a = test::logits_at_every_position(*short_model, tokens, 3);
  const auto b = test::logits_at_every_position(*long_model, tokens, 3);
  EXPECT_GT(max_abs_diff(a.data(), b.data(), a.size()), 1e-2f);
  const auto ref = test::ReferenceLlama(*long_model).logits(tokens, at);
  EXPECT_LE(max_abs_diff(b.data(), ref.data(), ref.size()), 1e-3f);
  // A file without long factors ignores the context.
  auto llama = LlamaModel::load(test::tiny_arch_path(TinyArch::Llama), true, 1 << 20);
  EXPECT_FALSE(llama->config().rope_long_active);
  EXPECT_TRUE(llama->fits_context(1 << 20));
}

TEST(Phi3Config, BadFusedShapesAndFactorsAreNamed) {
  TinyModelOptions o;
  o.arch = TinyArch::Phi3;
  auto edit_tensor = [&](const std::string& name, const std::string& tensor, int64_t rows) {
    return test::edited_model(name,
                              {[](const std::string&, GgufValue&) { return true; },
                               [&](const GgufTensor& t, GgmlType&, std::vector<int64_t>& ne) {
                                 if (t.name == tensor) ne[1] = rows;
                                 return true;
                               }},
                              o);
  };
  // attn_qkv one row short of q + k + v; ffn_up holding only the up half.
  const std::string qkv = load_error(edit_tensor("phi3-short-qkv", "blk.1.attn_qkv.weight", 159));
  EXPECT_NE(qkv.find("blk.1.attn_qkv.weight"), std::string::npos) << qkv;
  const std::string up = load_error(edit_tensor("phi3-half-up", "blk.0.ffn_up.weight", 256));
  EXPECT_NE(up.find("blk.0.ffn_up.weight"), std::string::npos) << up;
  auto set_f32 = [&](const std::string& name, const std::string& key, float value) {
    return test::edited_model(name,
                              {[=](const std::string& k, GgufValue& v) {
                                 if (k == key) v.data = static_cast<double>(value);
                                 return true;
                               },
                               {}},
                              o);
  };
  for (float bad : {0.0f, -1.0f, NAN, 100.0f}) {
    const std::string err =
        load_error(set_f32("phi3-bad-attn-factor", "phi3.rope.scaling.attn_factor", bad));
    EXPECT_NE(err.find("phi3.rope.scaling.attn_factor' is out of range"), std::string::npos) << err;
  }
  // A zero divisor would make every angle infinite: either set of factors
  // rewritten as zeros (of type F16) is refused, the long one even when the
  // short one is in use.
  for (const std::string tensor : {"rope_factors_short.weight", "rope_factors_long.weight"}) {
    const std::string zero = load_error(
        test::edited_model("phi3-zero-factor",
                           {[](const std::string&, GgufValue&) { return true; },
                            [&](const GgufTensor& t, GgmlType& type, std::vector<int64_t>&) {
                              if (t.name == tensor) type = GgmlType::F16;
                              return true;
                            }},
                           o));
    EXPECT_NE(zero.find("phi3-zero-factor.gguf: a RoPE frequency factor is not in (0, 1e6)"),
              std::string::npos)
        << tensor << ": " << zero;
  }
}

// Every shape in every family type: the exact forward against the reference
// (in one chunk and in chunks), 8-bit activations near it.
TEST(Phi3Forward, MatchesNaiveReferenceAtEveryShapeAndType) {
  const TinyWeights types[] = {TinyWeights::F16,    TinyWeights::BF16, TinyWeights::Q8_0,
                               TinyWeights::Q4_0,   TinyWeights::Q6_K, TinyWeights::Q4_K_M,
                               TinyWeights::Q5_K_M, TinyWeights::Mixed};
  for (const Shape& s : kShapes) {
    for (TinyWeights w : types) {
      const TinyModelOptions o = options(TinyArch::Phi3, s, w);
      const std::string what = "phi3 " + std::to_string(s.heads) + "/" +
                               std::to_string(s.kv_heads) + "x" + std::to_string(s.head_dim) + " " +
                               std::string(tiny_weights_name(w));
      auto model = LlamaModel::load(tiny_path(o, "phi3"));
      // The prompt (12 tokens) is longer than the stated window (5): a
      // window applied would show. 8-bit activations: within 8% of the
      // largest logit, the bound the llama.cpp check puts between the two
      // arithmetics (llama.cpp's own logits are 6.1% from kvbench's exact
      // ones on these files; measured here at most 5.1%, Q5_K_M at 4 heads
      // of 64).
      test::expect_forward_matches_reference<test::ReferenceLlama>(*model, what, 5, 0.08f);
    }
  }
}

TEST(Phi3Forward, CachedDecodeMatchesRecompute) {
  auto model = LlamaModel::load(
      tiny_path(options(TinyArch::Phi3, kShapes[1], TinyWeights::Q8_0), "phi3-decode"));
  EXPECT_LE(test::check_decode_from_random_prompt<test::ReferenceLlama>(*model, 5, 10).worst,
            1e-3f);
}

// Mistral's GGUF files are llama ones; a file that states a sliding window
// runs with every layer global, as llama.cpp's llama graph runs it.
TEST(MistralStyle, AStatedWindowLoadsAndIsNotApplied) {
  TinyModelOptions o = options(TinyArch::Llama, {512, 4, 1, 128}, TinyWeights::Q4_K_M);
  o.vocab = TinyVocabKind::Spm;
  o.sliding_window = 5;
  auto model = LlamaModel::load(tiny_path(o, "mistral"));
  const LlamaConfig& c = model->config();
  EXPECT_EQ(c.unapplied_sliding_window, 5);
  EXPECT_FALSE(c.has_local_layers());
  EXPECT_EQ(c.kv_mul(), 4);
  const auto tokens = some_tokens(12, c.n_vocab, 5);
  std::vector<int64_t> at(tokens.size());
  std::iota(at.begin(), at.end(), 0);
  const auto ref = test::ReferenceLlama(*model).logits(tokens, at);
  const auto fast = test::logits_at_every_position(*model, tokens, 4);
  EXPECT_LE(max_abs_diff(fast.data(), ref.data(), ref.size()), 1e-3f);
}

// The command line writes, describes and runs them like any other file.
TEST(Phi3Cli, TinyFilesRunPolicies) {
  const std::string path = testing::TempDir() + "kvbench-cli-tiny-phi3.gguf";
  const auto w = test::run_kvbench("tiny-model -o " + path +
                                   " --arch phi3 --weights q4_k_m --dim 384 --heads 4 "
                                   "--kv-heads 4 --head-dim 96 --ffn 512");
  ASSERT_EQ(w.code, 0) << w.err;
  const auto info = test::run_kvbench("info --model " + path);
  ASSERT_EQ(info.code, 0) << info.err;
  for (const char* line :
       {"rope pairs: halves (neox)", "LongRoPE short factors, attention factor 1.19",
        "block: pre-norms, SwiGLU (gate and up fused in ffn_up)",
        "LongRoPE: short factors for a context of up to 1024 tokens",
        "sliding window 5 stated, not applied"})
    EXPECT_NE(info.out.find(line), std::string::npos) << line << "\n" << info.out;
  for (const char* policy : {"full", "snapkv:budget=6,window=2", "h2o:budget=6",
                             "expected:budget=6,sinks=1", "full+kivi2", "quest:budget=6"}) {
    const auto gen = test::run_kvbench(
        "generate --prompt 'hello world hello world hello' --max-tokens 6 --policy " +
        std::string(policy) + " --model " + path);
    EXPECT_EQ(gen.code, 0) << policy << ": " << gen.err;
  }
  // A run whose longest sequence exceeds the original context (1024) runs on
  // the long factors, and says so.
  const auto run = test::run_kvbench_in(
      KVBENCH_SOURCE_DIR, "run experiments/quick.json --limit 1 -t 2 --model " + path + " --out " +
                              testing::TempDir() + "kvbench-phi3-run");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find("LongRoPE's long factors: the longest sequence ("), std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("exceeds the original context (1024)"), std::string::npos) << run.err;
  const std::string mistral = testing::TempDir() + "kvbench-cli-tiny-mistral.gguf";
  ASSERT_EQ(test::run_kvbench("tiny-model -o " + mistral +
                              " --vocab spm --sliding-window 4096 --heads 4 --kv-heads 1 "
                              "--dim 256 --head-dim 64")
                .code,
            0);
  const auto minfo = test::run_kvbench("info --model " + mistral);
  EXPECT_NE(minfo.out.find("sliding window 4096 stated, not applied: every layer attends every "
                           "key, as llama.cpp runs this architecture"),
            std::string::npos)
      << minfo.out;
  test::expect_input_error(test::run_kvbench("tiny-model -o " + testing::TempDir() +
                                             "x.gguf --arch qwen2 --sliding-window 8"),
                           "tiny model: a stated sliding window is for --arch llama or phi3");
  test::expect_input_error(
      test::run_kvbench("tiny-model -o " + testing::TempDir() + "x.gguf --sliding-window -3"),
      "tiny model: sliding window -3 is out of range [0, 1048576]");
}

}  // namespace
}  // namespace kvbench
