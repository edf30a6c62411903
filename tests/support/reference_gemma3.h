// A naive scalar Gemma 3 forward for tests, written from the architecture's
// definition and independent of model/transformer_block.cpp: fully dequantized
// weights, every sum in double, every position recomputed with no cache, the
// sliding window as an explicit (t - window, t] range. Also Gemma 2: the same
// block without QK-norms, its scores soft-capped (reference::attend).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/llama_model.h"
#include "tests/support/reference_forward.h"

namespace kvbench::test {

class ReferenceGemma3 final : public reference::Forward {
 public:
  explicit ReferenceGemma3(const LlamaModel& model);
  std::vector<float> logits(const std::vector<int32_t>& tokens,
                            const std::vector<int64_t>& score_at) const override;

 private:
  using Matrix = reference::DenseMatrix;
  struct Layer {
    std::vector<float> attn_norm, q_norm, k_norm, attn_post_norm, ffn_norm, ffn_post_norm;
    Matrix wq, wk, wv, wo, gate, up, down;
  };
  std::vector<Layer> layers_;
};

// The tiny gemma3 model (TinyArch::Gemma3, SentencePiece vocabulary),
// written to a temporary file once per process.
std::string tiny_gemma3_path();
// Gemma 3 270M if present (<repo>/models/gemma-3-270m-q4_k_m.gguf), else "".
std::string gemma3_path();

}  // namespace kvbench::test
