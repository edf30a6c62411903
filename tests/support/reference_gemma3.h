// A naive scalar Gemma 3 forward for tests, written from the architecture's
// definition and independent of model/transformer_block.cpp: fully dequantized
// weights, every sum in double, every position recomputed with no cache, the
// sliding window as an explicit (t - window, t] range.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/llama_model.h"

namespace kvbench::test {

class ReferenceGemma3 {
 public:
  explicit ReferenceGemma3(const LlamaModel& model);
  // Logits [n_vocab] after each of the positions listed in `score_at` (indices
  // into tokens; positions are 0..n-1), concatenated in that order.
  std::vector<float> logits(const std::vector<int32_t>& tokens,
                            const std::vector<int64_t>& score_at) const;

 private:
  struct Matrix {
    int64_t rows = 0, cols = 0;
    std::vector<float> w;  // [rows][cols]
  };
  static Matrix dequantize(const WeightMatrix& m);
  struct Layer {
    std::vector<float> attn_norm, q_norm, k_norm, attn_post_norm, ffn_norm, ffn_post_norm;
    Matrix wq, wk, wv, wo, gate, up, down;
  };
  const LlamaConfig& c_;
  Matrix embd_, output_;
  std::vector<float> output_norm_;
  std::vector<Layer> layers_;
};

// The tiny gemma3 model (TinyModelOptions::gemma3, SentencePiece vocabulary),
// written to a temporary file once per process.
std::string tiny_gemma3_path();
// Gemma 3 270M if present (<repo>/models/gemma-3-270m-q4_k_m.gguf), else "".
std::string gemma3_path();

}  // namespace kvbench::test
