// The project's own tiny random-weight GGUF files: few layers, GQA, sizes
// that are not powers of two and (by default) a different tensor type in
// most tensors, so unit tests exercise the whole loader and forward pass
// without the big model. Each architecture kvbench runs can be written
// (TinyArch), and the shape and weight type can be set, so that a family's
// files can be checked against llama.cpp at the shapes and quantization
// types the family ships (docs/ARCHITECTURES.md). Deterministic for a given
// options value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf/ggml_types.h"
#include "model/testing/tiny_vocab.h"

namespace kvbench {

enum class TinyArch {
  Llama,
  // QK-norms, post-norms, GeGLU, NEOX RoPE, local layers with a sliding
  // window, logit soft-capping (TinyGemma3Shape).
  Gemma3,
  Qwen2,  // LLaMA's block with Q/K/V biases and NEOX RoPE
  Qwen3,  // LLaMA's block with QK-norms and NEOX RoPE, no biases
  // LLaMA's block with fused attn_qkv and gate/up tensors, NEOX RoPE with
  // LongRoPE factors and attention factor, a stated window (TinyPhi3Shape).
  Phi3,
  // Gemma 3's block without QK-norms, with attention soft-capping; every
  // other layer local (TinyGemma2Shape).
  Gemma2,
};

// "llama", "gemma3", "qwen2", "qwen3", "phi3", "gemma2" (general.architecture); nullopt for
// another name.
std::optional<TinyArch> tiny_arch(std::string_view name);
std::string_view tiny_arch_name(TinyArch arch);

// The weight types a tiny file can be written in with TinyModelOptions::
// weight_type: one GGML type for every matrix, or llama.cpp's K-quant mixes.
enum class TinyWeights {
  Mixed,  // the tests' mix: a different type in most tensors (the default)
  F16,
  BF16,
  Q8_0,
  Q4_0,
  Q6_K,
  Q4_K_M,  // Q4_K, with attn_v, ffn_down and output in Q6_K (as llama-quantize's Q4_K_M)
  Q5_K_M,  // Q5_K, with the same tensors in Q6_K
};
// "mixed", "f16", "bf16", "q8_0", "q4_0", "q6_k", "q4_k_m", "q5_k_m".
std::optional<TinyWeights> tiny_weights(std::string_view name);
std::string_view tiny_weights_name(TinyWeights w);

struct TinyModelOptions {
  TinyVocabKind vocab = TinyVocabKind::Bpe;
  TinyArch arch = TinyArch::Llama;
  bool tied_output = true;  // no output.weight: logits use token_embd (as SmolLM2)
  // The shape; 0 takes TinyModelShape's (head_dim: dim / n_heads, gemma3's
  // TinyGemma3Shape::head_dim). A head_dim other than dim / n_heads is
  // written as ARCH.attention.key_length.
  int dim = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, ffn_dim = 0;
  TinyWeights weights = TinyWeights::Mixed;
  // The BPE vocabulary's pre-tokenizer (tokenizer.ggml.pre), for checking a
  // family's split rules against llama.cpp: "qwen2", "llama3", ...; empty:
  // "smollm", the one its merges were learned on. Bpe only; a file with one
  // also has write_tiny_vocab_with_pre's probe tokens.
  std::string pre;
  // llama and phi3: ARCH.attention.sliding_window, a window the file states
  // and llama.cpp does not apply (Mistral's, Phi-3-mini's); 0: no key. phi3
  // files always state one (TinyPhi3Shape::sliding_window by default).
  int sliding_window = 0;
  uint64_t seed = 1;
};

// Shapes of every tiny model (the vocabulary size comes from the vocab kind).
struct TinyModelShape {
  static constexpr int n_layers = 3;
  static constexpr int dim = 96;
  static constexpr int n_heads = 6;
  static constexpr int n_kv_heads = 2;  // GQA: 3 query heads per KV head
  static constexpr int ffn_dim = 256;   // a multiple of 256 so ffn_down can be a K-quant
  static constexpr int n_ctx = 2048;
};

// What the gemma3 tiny model changes: a head dimension of its own
// (gemma3.attention.key_length, so n_heads * head_dim != dim, as in Gemma 3
// 270M), a window shorter than the tests' prompts, layers 0 and 1 local and
// layer 2 global (sliding_window_pattern 3), and a soft-cap that bites on
// random logits.
struct TinyGemma3Shape {
  static constexpr int head_dim = 32;
  static constexpr int sliding_window = 5;
  static constexpr int pattern = 3;
  static constexpr float rope_base = 1000000.0f;  // global layers; local ones use 10,000
  static constexpr float softcap = 4.0f;
};

// What the gemma2 tiny model changes from gemma3's (its head dimension,
// window, embedding scale and final soft-cap): no QK-norms, the window and
// no pattern key (llama.cpp's default, every other layer local: 0 and 2 of
// 3), a RoPE base of 10,000 for every layer, and an attention soft-cap that
// bites on the tiny file's scores (Gemma 2's own is 50).
struct TinyGemma2Shape {
  static constexpr float attn_softcap = 3.0f;
  static constexpr float rope_base = 10000.0f;
};

// What the phi3 tiny model sets, as Phi-3.5-mini's converted file does:
// LongRoPE's short and long factors (random, the short ones in [1, 2.5) so
// that they change the angles), an original context above the oracle's
// context of 512 tokens (so llama.cpp takes the short factors, as kvbench
// always does), Phi-3.5-mini's attention factor sqrt(1 + ln 32 / ln 4096),
// and a sliding window shorter than the test prompts, which llama.cpp does
// not apply (so the check proves kvbench does not either).
struct TinyPhi3Shape {
  static constexpr int original_context = 1024;
  static constexpr float attn_factor = 1.1902381f;
  static constexpr int sliding_window = 5;
};

// Throws InputError for a shape that cannot be written (n_heads not a
// multiple of n_kv_heads, an odd head_dim, a size out of [1, 4096]).
std::vector<uint8_t> make_tiny_model(const TinyModelOptions& options);
void write_tiny_model(const std::string& path, const TinyModelOptions& options);

}  // namespace kvbench
