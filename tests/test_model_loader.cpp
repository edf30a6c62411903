// Loading a LLaMA GGUF: every missing or wrong key, tensor, shape and type is
// one InputError naming the file and the culprit.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "model/common/error.h"
#include "model/gguf/gguf_writer.h"
#include "model/llama_model.h"
#include "model/testing/tiny_model.h"
#include "tests/support/cli_run.h"
#include "tests/support/edited_model.h"
#include "tests/support/input_error.h"

namespace kvbench {
namespace {

using test::Edit;
using test::edited_model;

std::string load_error(const std::string& path) {
  return test::input_error_of([&] { LlamaModel::load(path); });
}

TEST(ModelLoader, TinyModelLoads) {
  const auto bytes = make_tiny_model({});
  const std::string path = testing::TempDir() + "loader-ok.gguf";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  auto m = LlamaModel::load(path);
  EXPECT_EQ(m->config().n_layers, TinyModelShape::n_layers);
  EXPECT_EQ(m->config().n_kv_heads, TinyModelShape::n_kv_heads);
  EXPECT_EQ(m->config().head_dim, TinyModelShape::dim / TinyModelShape::n_heads);
  EXPECT_TRUE(m->weights().tied_output);
  // A LLaMA block: pre-norms only, SwiGLU, nothing scaled or capped, every
  // layer global.
  const LlamaConfig& c = m->config();
  EXPECT_TRUE(c.norms.pre_attention && c.norms.pre_ffn);
  EXPECT_FALSE(c.norms.qk || c.norms.post_attention || c.norms.post_ffn);
  EXPECT_EQ(c.activation, Activation::Silu);
  EXPECT_EQ(c.embed_scale, 1.0f);
  EXPECT_EQ(c.attn_scale, 0.0f);
  EXPECT_EQ(c.final_logit_softcap, 0.0f);
  EXPECT_FALSE(c.rope.neox);
  EXPECT_FALSE(c.has_local_layers());
  EXPECT_EQ(c.local, std::vector<bool>(TinyModelShape::n_layers, false));
}

TEST(ModelLoader, MissingRequiredKeys) {
  for (const std::string key :
       {"general.architecture", "llama.block_count", "llama.embedding_length",
        "llama.feed_forward_length", "llama.attention.head_count", "llama.context_length"}) {
    const auto path = edited_model(
        "missing-key", {[&](const std::string& k, GgufValue&) { return k != key; }, {}});
    const std::string err = load_error(path);
    EXPECT_NE(err.find("missing-key.gguf: missing key '" + key + "'"), std::string::npos) << err;
  }
}

TEST(ModelLoader, UnsupportedArchitecture) {
  const auto path = edited_model("arch", {[](const std::string& k, GgufValue& v) {
                                            if (k == "general.architecture")
                                              v.data = std::string("mamba");
                                            return true;
                                          },
                                          {}});
  EXPECT_NE(load_error(path).find("unsupported architecture 'mamba'"), std::string::npos);
}

// Mixtral's GGUF files are llama files with experts: refused as such, not
// for the dense FFN tensor they lack.
TEST(ModelLoader, MixtureOfExpertsIsRefusedAsSuch) {
  Edit experts{{}, {}, [](GgufWriter& w) { w.set_u32("llama.expert_count", 8); }};
  const std::string err = load_error(edited_model("moe", experts));
  EXPECT_NE(err.find("moe.gguf: llama.expert_count is 8: mixture-of-experts models are not "
                     "supported"),
            std::string::npos)
      << err;
  // A count of 0 is a dense model.
  Edit none{{}, {}, [](GgufWriter& w) { w.set_u32("llama.expert_count", 0); }};
  EXPECT_NO_THROW(LlamaModel::load(edited_model("moe-zero", none)));
}

// `info` reads any architecture's metadata and tensors; only the commands
// that run a model refuse one kvbench does not run.
TEST(ModelLoader, InfoShowsAnArchitectureItDoesNotRun) {
  const auto path = edited_model("gemma4", {[](const std::string& k, GgufValue& v) {
                                              if (k == "general.architecture")
                                                v.data = std::string("gemma4");
                                              return true;
                                            },
                                            {}});
  const test::CliResult info = test::run_kvbench("info --tensors --model " + path);
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("general.architecture = \"gemma4\""), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("architecture 'gemma4', which kvbench does not run (it runs 'llama', "
                          "'gemma3', 'qwen2', 'qwen3', 'phi3' and 'gemma2')"),
            std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("blk.0.attn_q.weight"), std::string::npos);
  EXPECT_EQ(info.out.find("full-cache KV bytes"), std::string::npos);
  test::expect_input_error(test::run_kvbench("generate --prompt hi --model " + path),
                           "unsupported architecture 'gemma4'");
}

TEST(ModelLoader, OutOfRangeAndInconsistentHyperParameters) {
  auto set_u32 = [](const std::string& key, uint64_t value) {
    return Edit{[=](const std::string& k, GgufValue& v) {
                  if (k == key) v.data = value;
                  return true;
                },
                {}};
  };
  EXPECT_NE(
      load_error(edited_model("zero-layers", set_u32("llama.block_count", 0))).find("out of range"),
      std::string::npos);
  EXPECT_NE(load_error(edited_model("kv-heads", set_u32("llama.attention.head_count_kv", 4)))
                .find("not a multiple"),
            std::string::npos);
  // More layers than tensors: the first missing block tensor is named.
  EXPECT_NE(load_error(edited_model("layers", set_u32("llama.block_count", 4)))
                .find("missing tensor 'blk.3.attn_norm.weight'"),
            std::string::npos);
}

TEST(ModelLoader, MissingTensorWrongShapeUnsupportedType) {
  const auto missing =
      edited_model("no-q", {{}, [](const GgufTensor& t, GgmlType&, std::vector<int64_t>&) {
                              return t.name != "blk.1.attn_q.weight";
                            }});
  EXPECT_NE(load_error(missing).find("missing tensor 'blk.1.attn_q.weight'"), std::string::npos);

  const auto shape =
      edited_model("shape", {{}, [](const GgufTensor& t, GgmlType&, std::vector<int64_t>& ne) {
                               if (t.name == "blk.0.attn_k.weight") ne = {96, 64};
                               return true;
                             }});
  EXPECT_NE(load_error(shape).find("tensor 'blk.0.attn_k.weight' has shape [96, 64]"),
            std::string::npos);

  // I32 is a valid GGML type but not a weight type kvbench can dequantize.
  const auto type =
      edited_model("type", {{}, [](const GgufTensor& t, GgmlType& ty, std::vector<int64_t>&) {
                              if (t.name == "blk.0.attn_v.weight") ty = GgmlType::I32;
                              return true;
                            }});
  EXPECT_NE(load_error(type).find("tensor 'blk.0.attn_v.weight' has type I32"), std::string::npos);
}

}  // namespace
}  // namespace kvbench
