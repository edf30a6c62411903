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

std::vector<uint8_t> make_tiny_model(const TinyModelOptions& options);
void write_tiny_model(const std::string& path, const TinyModelOptions& options);

}  // namespace kvbench
