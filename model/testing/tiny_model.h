// The project's own tiny random-weight LLaMA GGUF: few layers, GQA, sizes
// that are not powers of two, and a different tensor type in most tensors,
// so unit tests exercise the whole loader and forward pass without the big
// model. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/testing/tiny_vocab.h"

namespace kvbench {

struct TinyModelOptions {
  TinyVocabKind vocab = TinyVocabKind::Bpe;
  // A gemma3 file instead of a llama one (TinyGemma3Shape): QK-norms,
  // post-norms, GeGLU, NEOX RoPE, local layers with a sliding window, logit
  // soft-capping.
  bool gemma3 = false;
  bool tied_output = true;  // no output.weight: logits use token_embd (as SmolLM2)
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

std::vector<uint8_t> make_tiny_model(const TinyModelOptions& options);
void write_tiny_model(const std::string& path, const TinyModelOptions& options);

}  // namespace kvbench
