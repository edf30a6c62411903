// Random-weight models of real shapes (model/testing/shaped_model.*): the named
// shapes' tensor lists and sizes computed without writing a byte, the random
// quantized blocks they are made of, a small shape written by the same code
// that loads and runs the forward pass, and the tiny-model command's --shape.
// (The streaming writer and the tiny model's unchanged bytes: test_gguf.cpp.)
// The named shapes' files are GBs: they are checked by hand against
// llama-bench (docs/PERFORMANCE.md), never here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <set>

#include "model/common/error.h"
#include "model/evaluator.h"
#include "model/gguf/gguf.h"
#include "model/gguf/gguf_writer.h"
#include "model/llama_model.h"
#include "model/testing/shaped_model.h"
#include "model/testing/tiny_model.h"
#include "policies/full_cache.h"
#include "tests/support/cli_run.h"
#include "tests/support/decode_check.h"
#include "tests/support/padded_vocab.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

std::string temp_path(const std::string& what) {
  return testing::TempDir() + "kvbench-shaped-" + what + "-" + std::to_string(::getpid()) + ".gguf";
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Totals {
  int64_t params = 0;
  uint64_t bytes = 0;
};
Totals totals(const std::vector<PlannedTensor>& plan) {
  Totals t;
  for (const PlannedTensor& p : plan) {
    t.params += p.elements;
    t.bytes += p.bytes;
  }
  return t;
}

const PlannedTensor* find(const std::vector<PlannedTensor>& plan, const std::string& name) {
  for (const PlannedTensor& p : plan) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// ---- the named shapes, planned without writing ---------------------------

TEST(ShapedModelPlan, Llama32_1bHasTheRealTensorsAndSizes) {
  const ModelShape* s = find_model_shape("llama3.2-1b");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->n_layers, 16);
  EXPECT_EQ(s->dim, 2048);
  EXPECT_EQ(s->n_heads, 32);
  EXPECT_EQ(s->n_kv_heads, 8);
  EXPECT_EQ(s->head_dim(), 64);
  EXPECT_EQ(s->ffn_dim, 8192);
  EXPECT_EQ(s->n_vocab, 128256);
  EXPECT_EQ(s->n_ctx, 131072);
  EXPECT_EQ(s->rope_freq_base, 500000.0f);
  EXPECT_EQ(s->rms_eps, 1e-5f);
  EXPECT_TRUE(s->tied_output);
  EXPECT_EQ(s->rope_scale_factor, 32.0f);

  const auto plan = plan_shaped_model(*s, GgmlType::Q4_0);
  // token_embd, rope_freqs, 9 per layer, output_norm; tied: no output.weight.
  EXPECT_EQ(plan.size(), 3u + 16 * 9);
  EXPECT_EQ(find(plan, "output.weight"), nullptr);
  ASSERT_NE(find(plan, "rope_freqs.weight"), nullptr);
  EXPECT_EQ(find(plan, "rope_freqs.weight")->ne, (std::vector<int64_t>{32}));
  EXPECT_EQ(find(plan, "token_embd.weight")->ne, (std::vector<int64_t>{2048, 128256}));
  EXPECT_EQ(find(plan, "token_embd.weight")->type, GgmlType::Q4_0);
  EXPECT_EQ(find(plan, "blk.15.attn_k.weight")->ne, (std::vector<int64_t>{2048, 512}));
  EXPECT_EQ(find(plan, "blk.15.attn_output.weight")->ne, (std::vector<int64_t>{2048, 2048}));
  EXPECT_EQ(find(plan, "blk.0.ffn_down.weight")->ne, (std::vector<int64_t>{8192, 2048}));
  EXPECT_EQ(find(plan, "blk.0.ffn_norm.weight")->type, GgmlType::F32);

  const int64_t embd = 128256LL * 2048;
  const int64_t layer = 2048LL * 2048 * 2 + 2048LL * 512 * 2 + 3 * 2048LL * 8192 + 2 * 2048;
  const int64_t norms = 16 * 2 * 2048 + 2048, rope = 32;
  const Totals t = totals(plan);
  EXPECT_EQ(t.params, embd + 16 * layer + 2048 + rope);
  EXPECT_EQ(t.params, 1235814432);  // "1.24B" of the model card
  // Q4_0: 18 bytes per 32 weights; f32 norms and rope factors.
  EXPECT_EQ(t.bytes,
            static_cast<uint64_t>((t.params - norms - rope) / 32 * 18 + (norms + rope) * 4));
  EXPECT_EQ(totals(plan_shaped_model(*s, GgmlType::Q8_0)).bytes,
            static_cast<uint64_t>((t.params - norms - rope) / 32 * 34 + (norms + rope) * 4));
  EXPECT_EQ(totals(plan_shaped_model(*s, GgmlType::Q4_K)).bytes,
            static_cast<uint64_t>((t.params - norms - rope) / 256 * 144 + (norms + rope) * 4));
}

TEST(ShapedModelPlan, Llama3_8bHasTheRealTensorsAndSizes) {
  const ModelShape* s = find_model_shape("llama3-8b");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->n_layers, 32);
  EXPECT_EQ(s->dim, 4096);
  EXPECT_EQ(s->head_dim(), 128);
  EXPECT_EQ(s->n_kv_heads, 8);
  EXPECT_EQ(s->ffn_dim, 14336);
  EXPECT_EQ(s->n_vocab, 128256);
  EXPECT_EQ(s->n_ctx, 8192);
  EXPECT_EQ(s->rope_freq_base, 500000.0f);
  EXPECT_FALSE(s->tied_output);
  EXPECT_EQ(s->rope_scale_factor, 0.0f);  // Llama 3 (not 3.1) has no rope scaling

  const auto plan = plan_shaped_model(*s, GgmlType::Q4_K);
  EXPECT_EQ(plan.size(), 2u + 32 * 9 + 1);  // token_embd, layers, output_norm, output
  EXPECT_EQ(find(plan, "rope_freqs.weight"), nullptr);
  ASSERT_NE(find(plan, "output.weight"), nullptr);
  EXPECT_EQ(find(plan, "output.weight")->ne, (std::vector<int64_t>{4096, 128256}));
  EXPECT_EQ(find(plan, "output.weight")->type, GgmlType::Q4_K);
  EXPECT_EQ(find(plan, "blk.31.attn_v.weight")->ne, (std::vector<int64_t>{4096, 1024}));
  EXPECT_EQ(find(plan, "blk.31.ffn_down.weight")->ne, (std::vector<int64_t>{14336, 4096}));
  // Tensor order as written: token_embd first, output last.
  EXPECT_EQ(plan.front().name, "token_embd.weight");
  EXPECT_EQ(plan.back().name, "output.weight");

  const int64_t embd = 128256LL * 4096;
  const int64_t layer = 4096LL * 4096 * 2 + 4096LL * 1024 * 2 + 3 * 4096LL * 14336 + 2 * 4096;
  const int64_t norms = 32 * 2 * 4096 + 4096;
  const Totals t = totals(plan);
  EXPECT_EQ(t.params, 2 * embd + 32 * layer + 4096);
  EXPECT_EQ(t.params, 8030261248);  // "8.03B"
  EXPECT_EQ(t.bytes, static_cast<uint64_t>((t.params - norms) / 256 * 144 + norms * 4));
  EXPECT_EQ(totals(plan_shaped_model(*s, GgmlType::Q4_0)).bytes,
            static_cast<uint64_t>((t.params - norms) / 32 * 18 + norms * 4));  // ~4.52 GB
}

// The other families' shapes: every tensor of the real file, so the
// parameter count is the published one (safetensors totals of
// Qwen/Qwen2.5-7B-Instruct, Qwen/Qwen3-8B, microsoft/Phi-3.5-mini-instruct).
TEST(ShapedModelPlan, OtherFamiliesHaveTheRealTensorsAndParameterCounts) {
  struct Want {
    const char* name;
    const char* arch;
    int64_t params;
    size_t tensors;
  };
  for (const Want& w : {Want{"qwen2.5-7b", "qwen2", 7615616512, 2 + 28 * 12 + 1},
                        Want{"qwen3-8b", "qwen3", 8190735360, 2 + 36 * 11 + 1},
                        Want{"phi3.5-mini", "phi3", 3821079552, 2 + 32 * 6 + 1 + 2}}) {
    const ModelShape* s = find_model_shape(w.name);
    ASSERT_NE(s, nullptr) << w.name;
    EXPECT_EQ(s->arch, w.arch);
    const auto plan = plan_shaped_model(*s, GgmlType::Q4_0);
    EXPECT_EQ(plan.size(), w.tensors) << w.name;
    // LongRoPE's two factor vectors (48 + 48) are not parameters of the HF model.
    const int64_t extra = s->fused() ? s->head_dim() : 0;
    EXPECT_EQ(totals(plan).params - extra, w.params) << w.name;
  }
  const ModelShape& phi = *find_model_shape("phi3.5-mini");
  const auto plan = plan_shaped_model(phi, GgmlType::Q4_K);
  EXPECT_EQ(find(plan, "blk.0.attn_qkv.weight")->ne, (std::vector<int64_t>{3072, 9216}));
  EXPECT_EQ(find(plan, "blk.0.ffn_up.weight")->ne, (std::vector<int64_t>{3072, 16384}));
  EXPECT_EQ(find(plan, "rope_factors_short.weight")->ne, (std::vector<int64_t>{48}));
  const auto qwen = plan_shaped_model(*find_model_shape("qwen2.5-7b"), GgmlType::Q4_0);
  EXPECT_EQ(find(qwen, "blk.27.attn_k.bias")->ne, (std::vector<int64_t>{512}));
}

// A small shape of each other family through the same writer: it loads as
// its architecture and matches the naive reference.
TEST(ShapedModelFile, SmallShapesOfTheOtherFamiliesMatchTheReference) {
  for (const char* name : {"qwen2.5-7b", "qwen3-8b", "phi3.5-mini"}) {
    ModelShape s = *find_model_shape(name);
    s.name = std::string("test-small-") + name;
    s.n_layers = 2;
    s.dim = 256;
    s.n_heads = 4;
    s.n_kv_heads = s.n_kv_heads == s.n_heads ? 4 : 2;
    s.ffn_dim = 512;
    s.n_vocab = 1000;
    s.n_ctx = 8192;
    const std::string path = temp_path(s.name);
    write_shaped_model(path, s, GgmlType::Q8_0, 3);
    const auto model = LlamaModel::load(path);
    const LlamaConfig& c = model->config();
    EXPECT_EQ(c.arch_name, s.arch) << name;
    EXPECT_TRUE(c.rope.neox) << name;
    EXPECT_EQ(!model->weights().layers[0].bq.empty(), s.qkv_bias()) << name;
    EXPECT_EQ(c.norms.qk, s.qk_norm()) << name;
    EXPECT_EQ(c.fused_gate_up, s.fused()) << name;
    if (s.fused()) {
      EXPECT_FLOAT_EQ(c.rope.attn_factor, 1.1902381f);
      EXPECT_EQ(c.n_ctx_orig, 4096);
      EXPECT_EQ(c.unapplied_sliding_window, 262144);
    }
    const auto tokens = test::some_tokens(16, c.n_vocab, 5);
    std::vector<int64_t> at(tokens.size());
    std::iota(at.begin(), at.end(), 0);
    const auto ref = test::ReferenceLlama(*model).logits(tokens, at);
    const auto fast = test::logits_at_every_position(*model, tokens, 16);
    EXPECT_LE(test::max_abs_diff(fast.data(), ref.data(), ref.size()), 1e-3f) << name;
  }
}

TEST(ShapedModelPlan, NamesTypesAndWholeBlocks) {
  ASSERT_EQ(model_shapes().size(), 5u);
  EXPECT_EQ(find_model_shape("llama3-8b"), &model_shapes()[1]);
  EXPECT_EQ(find_model_shape("tiny"), nullptr);  // the tiny model is tiny_model.h's
  EXPECT_EQ(find_model_shape("Llama3-8B"), nullptr);
  EXPECT_EQ(shaped_weight_type("q4_0"), GgmlType::Q4_0);
  EXPECT_EQ(shaped_weight_type("q8_0"), GgmlType::Q8_0);
  EXPECT_EQ(shaped_weight_type("q4_k"), GgmlType::Q4_K);
  EXPECT_EQ(shaped_weight_type("q4_1"), std::nullopt);
  EXPECT_EQ(shaped_weight_type("Q4_0"), std::nullopt);
  for (const ModelShape& s : model_shapes()) {
    for (std::string_view name : shaped_weight_type_names()) {
      for (const PlannedTensor& p : plan_shaped_model(s, *shaped_weight_type(name))) {
        EXPECT_TRUE(row_is_whole(p.type, p.ne[0])) << s.name << " " << p.name;
      }
    }
  }
  // A row of 96 is whole Q4_0 blocks but not Q4_K super-blocks: an InputError naming the tensor.
  ModelShape odd = model_shapes()[0];
  odd.name = "odd";
  odd.dim = 96;
  odd.n_heads = 3;
  odd.n_kv_heads = 1;
  EXPECT_NO_THROW(plan_shaped_model(odd, GgmlType::Q4_0));
  try {
    plan_shaped_model(odd, GgmlType::Q4_K);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("odd: token_embd.weight rows of 96 elements"),
              std::string::npos)
        << e.what();
  }
}

// ---- random quantized blocks ---------------------------------------------

class RandomQuantBlocks : public ::testing::TestWithParam<GgmlType> {};

TEST_P(RandomQuantBlocks, DecodeToFiniteCentredValuesOfTheAskedScale) {
  const GgmlType type = GetParam();
  const TypeTraits& tt = traits(type);
  const int64_t n_blocks = 4096, n = n_blocks * tt.block_size;
  const float rms = 1.0f / std::sqrt(4096.0f);  // a 4096-wide matrix: d is a small normal f16
  std::vector<uint8_t> blocks(static_cast<size_t>(n_blocks) * tt.block_bytes);
  random_quant_blocks(type, rms, 12345, blocks.data(), n_blocks);
  std::vector<float> x(static_cast<size_t>(n));
  dequantize_row(type, blocks.data(), x.data(), n);

  double sum = 0, sum_sq = 0;
  for (float v : x) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sum_sq += double{v} * v;
  }
  const double got_rms = std::sqrt(sum_sq / n), mean = sum / n;
  EXPECT_NEAR(got_rms, rms, 0.03 * rms);
  EXPECT_LT(std::fabs(mean), 0.02 * rms);

  // Per-type structure: Q4_0 uses both signs of d; Q8_0 never writes -128;
  // Q4_K sub-blocks are centred (min = scale, dmin = 7.5 d), so no value
  // exceeds 7.5 d times the largest scale (35).
  int negative_d = 0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = blocks.data() + b * tt.block_bytes;
    const float d = fp16_to_fp32(static_cast<uint16_t>(blk[0] | (blk[1] << 8)));
    ASSERT_TRUE(std::isnormal(d)) << b;
    negative_d += d < 0;
    if (type == GgmlType::Q8_0) {
      for (int j = 2; j < 34; ++j) ASSERT_NE(blk[j], 0x80) << b;
    }
    if (type == GgmlType::Q4_K) {
      const float dmin = fp16_to_fp32(static_cast<uint16_t>(blk[2] | (blk[3] << 8)));
      EXPECT_NEAR(dmin, 7.5f * d, 7.5f * d * 1e-3f);
      for (int64_t i = 0; i < 256; ++i)
        ASSERT_LE(std::fabs(x[b * 256 + i]), 7.5f * d * 35 * 1.001f) << b;
    }
  }
  if (type == GgmlType::Q4_0) {
    EXPECT_GT(negative_d, n_blocks / 3);
    EXPECT_LT(negative_d, 2 * n_blocks / 3);
  } else {
    EXPECT_EQ(negative_d, 0);
  }

  // The whole code range is used: uniform codes reach about sqrt(3) rms
  // (Q4_0, Q8_0) and beyond (Q4_K's scales vary), on both sides.
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  EXPECT_LT(*lo, -1.6 * rms);
  EXPECT_GT(*hi, 1.6 * rms);

  // Deterministic in the stream; another stream gives other blocks.
  std::vector<uint8_t> again(blocks.size()), other(blocks.size());
  random_quant_blocks(type, rms, 12345, again.data(), n_blocks);
  random_quant_blocks(type, rms, 12346, other.data(), n_blocks);
  EXPECT_EQ(again, blocks);
  EXPECT_NE(other, blocks);
}

INSTANTIATE_TEST_SUITE_P(Types, RandomQuantBlocks,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// ---- a small shape through the real-shape writer --------------------------

// Not a named shape: small enough to compare with the naive reference, with
// llama3.2-1b's head size, rope base and llama3 rope scaling (so its
// rope_freqs are the 1B file's), GQA and K-quant-sized rows.
ModelShape small_shape(bool tied) {
  ModelShape s = *find_model_shape("llama3.2-1b");
  s.name = "test-small";
  s.n_layers = 2;
  s.dim = 256;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.ffn_dim = 512;
  s.n_vocab = 1000;
  s.n_ctx = 4096;
  s.tied_output = tied;
  return s;
}

class ShapedModelFile : public ::testing::TestWithParam<GgmlType> {};

TEST_P(ShapedModelFile, SmallShapeLoadsRunsAndMatchesTheReference) {
  const GgmlType type = GetParam();
  const bool tied = type != GgmlType::Q8_0;  // both tied and untied output covered
  const ModelShape shape = small_shape(tied);
  const std::string path = temp_path(std::string(type_name(type)));
  write_shaped_model(path, shape, type, 3);

  const auto model = LlamaModel::load(path);
  const LlamaConfig& c = model->config();
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.dim, 256);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.ffn_dim, 512);
  EXPECT_EQ(c.n_vocab, 1000);
  EXPECT_EQ(c.n_ctx_train, 4096);
  EXPECT_EQ(c.rope.freq_base, 500000.0f);
  EXPECT_EQ(model->weights().tied_output, tied);
  EXPECT_EQ(model->weights().layers[1].w_down.type, type);
  EXPECT_EQ(model->weights().tok_embd.type, type);
  // llama3 rope factors, as llama.cpp's converter writes them for Llama 3.2:
  // 1 for short wavelengths, the factor 32 for long ones, a blend between.
  const std::vector<float>& ff = c.rope.freq_factors;
  ASSERT_EQ(ff.size(), 32u);
  EXPECT_EQ(ff.front(), 1.0f);
  EXPECT_EQ(ff.back(), 32.0f);
  EXPECT_TRUE(std::is_sorted(ff.begin(), ff.end()));
  EXPECT_TRUE(std::any_of(ff.begin(), ff.end(), [](float f) { return f > 1.0f && f < 32.0f; }));
  EXPECT_EQ(model->file().get_u32("general.file_type"), type == GgmlType::Q4_0   ? 2u
                                                        : type == GgmlType::Q8_0 ? 7u
                                                                                 : 14u);

  // The vocabulary: exactly n_vocab unique pieces, byte tokens at 3..258.
  const Tokenizer& tok = model->tokenizer();
  EXPECT_EQ(tok.n_vocab(), 1000);
  EXPECT_EQ(tok.model_name(), "llama");
  const auto pieces = model->file().get_string_array("tokenizer.ggml.tokens");
  const size_t first_filler = static_cast<size_t>(tiny_vocab_size(TinyVocabKind::Spm));
  test::expect_padded_spm_pieces(pieces, first_filler, 1000);
  EXPECT_EQ(pieces[first_filler - 1].find("filler"), std::string_view::npos);
  const std::string text = "The quick brown fox\n\tjumps over 12 lazy dogs.";
  EXPECT_EQ(tok.decode(tok.encode(text, false, false)), text);

  // Forward: finite, not degenerate, and the optimized path agrees with the
  // naive double-precision reference on the same weights.
  const auto tokens = test::some_tokens(24, c.n_vocab, 5);
  Evaluator eval(*model, 2, MatmulMode::Exact);
  FullCache cache(model->kv_shape());
  std::vector<int32_t> pos(tokens.size());
  std::iota(pos.begin(), pos.end(), 0);
  std::vector<float> logits(tokens.size() * c.n_vocab);
  eval.step(std::span(tokens), pos, 0, StepPhase::Prefill, cache, Logits::All, logits.data());
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  std::vector<int64_t> at(tokens.size());
  std::iota(at.begin(), at.end(), 0);
  const auto ref = test::ReferenceLlama(*model).logits(tokens, at);
  EXPECT_LE(test::max_abs_diff(logits.data(), ref.data(), ref.size()), 1e-3f);
  const auto last = logits.end() - c.n_vocab;
  const auto [lo, hi] = std::minmax_element(last, logits.end());
  EXPECT_GT(*hi - *lo, 1.0f);    // random weights, yet a spread of logits
  EXPECT_LT(*hi - *lo, 100.0f);  // activations stayed O(1) through the layers

  // The same seed writes the same bytes; another seed other weights.
  const std::string again = temp_path("again"), other = temp_path("other");
  write_shaped_model(again, shape, type, 3);
  write_shaped_model(other, shape, type, 4);
  const auto bytes = read_bytes(path);
  EXPECT_EQ(read_bytes(again), bytes);
  const auto other_bytes = read_bytes(other);
  ASSERT_EQ(other_bytes.size(), bytes.size());  // same shape, same layout
  EXPECT_NE(other_bytes, bytes);
  for (const auto& p : {path, again, other}) std::filesystem::remove(p);
}

INSTANTIATE_TEST_SUITE_P(Types, ShapedModelFile,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// ---- the command line ----------------------------------------------------

TEST(TinyModelCli, BadShapeOrTypeIsOneLineErrorAndWritesNothing) {
  const std::string out = temp_path("cli");
  test::expect_input_error(
      test::run_kvbench("tiny-model -o " + out + " --shape llama4"),
      "unknown --shape 'llama4' (known: tiny, tiny-gemma3, llama3.2-1b, llama3-8b, qwen2.5-7b, "
      "qwen3-8b, phi3.5-mini)");
  test::expect_input_error(
      test::run_kvbench("tiny-model -o " + out + " --shape llama3-8b --type q5_k"),
      "unknown --type 'q5_k' (known: q4_0, q8_0, q4_k)");
  test::expect_input_error(test::run_kvbench("tiny-model -o " + out + " --type q8_0"),
                           "--type applies to the real shapes");
  test::expect_input_error(
      test::run_kvbench("tiny-model -o " + out + " --shape llama3.2-1b --vocab bpe"),
      "--vocab and --untied apply to --shape tiny or tiny-gemma3 only");
  test::expect_input_error(
      test::run_kvbench("tiny-model -o " + out + " --shape llama3.2-1b --untied"),
      "--vocab and --untied apply to --shape tiny or tiny-gemma3 only");
  EXPECT_FALSE(std::filesystem::exists(out));
  const auto help = test::run_kvbench("tiny-model --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("qwen3-8b|phi3.5-mini [--type q4_0|q8_0|q4_k]"), std::string::npos)
      << help.out;
  // The default is still the tiny model, byte for byte.
  const auto r = test::run_kvbench("tiny-model -o " + out);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(read_bytes(out), make_tiny_model({}));
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace kvbench
