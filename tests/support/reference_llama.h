// A naive scalar LLaMA forward for tests: straight math on fully dequantized
// weights, every sum in double, every position recomputed from scratch with
// no cache. Slow and obviously right; the optimized model is compared to it.
// Also Qwen2 (Q/K/V biases, NEOX RoPE) and Qwen3 (QK-norms, NEOX RoPE): the
// same block with those pieces; Phi-3 (its fused tensors taken apart by the
// loader, LongRoPE's short factors and attention factor in RoPE).
#pragma once

#include <cstdint>
#include <vector>

#include "model/llama_model.h"
#include "model/ops/quant_dot.h"
#include "model/testing/tiny_model.h"
#include "tests/support/reference_forward.h"

namespace kvbench::test {

class ReferenceLlama final : public reference::Forward {
 public:
  explicit ReferenceLlama(const LlamaModel& model);
  std::vector<float> logits(const std::vector<int32_t>& tokens,
                            const std::vector<int64_t>& score_at) const override;

 private:
  using Matrix = reference::DenseMatrix;
  struct Layer {
    std::vector<float> attn_norm, ffn_norm;
    std::vector<float> bq, bk, bv;      // Qwen2 (else empty)
    std::vector<float> q_norm, k_norm;  // Qwen3 (config.norms.qk)
    Matrix wq, wk, wv, wo, gate, up, down;
  };
  std::vector<Layer> layers_;
};

// The model the tests use: the tiny GGUF written to a temporary file once
// per process and vocabulary kind.
std::string tiny_model_path(bool spm = false, bool tied = true);
// The tiny file of another architecture (qwen2, qwen3, phi3: the default shape and
// the tests' mix of types), written once per process.
std::string tiny_arch_path(TinyArch arch);
// Path of the default model if present (KVBENCH_MODEL or <repo>/models/...), else "".
std::string smollm2_path();

float max_abs_diff(const float* a, const float* b, size_t n);

// The instruction-set paths this CPU runs (scalar first).
std::vector<CpuPath> supported_paths();

// n pseudo-random token ids in [0, n_vocab), the same for the same seed.
std::vector<int32_t> some_tokens(int n, int n_vocab, uint32_t seed);

// The positions begin, begin + 1, ..., begin + n - 1.
std::vector<int32_t> iota_positions(int64_t begin, int64_t n);

}  // namespace kvbench::test
