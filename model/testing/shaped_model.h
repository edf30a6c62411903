// Random-weight GGUF files of real models' shapes (Llama 3.2 1B, Llama 3 8B,
// Qwen2.5 7B, Qwen3 8B, Phi-3.5-mini): every tensor the real file has, of
// its real size and type (Qwen2's biases, Qwen3's QK-norms, Phi-3's fused
// tensors and LongRoPE factors included), so
// speed can be measured beyond the tiny and 135M models (random weights
// change no timing). The files are GBs: weights are generated as quantized
// blocks directly (random codes, f16 scales sized so activations stay O(1)),
// a row at a time while the file is streamed to disk.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf/ggml_types.h"

namespace kvbench {

// Hyper-parameters as in the model's config.json.
struct ModelShape {
  std::string name;                 // "llama3.2-1b", "llama3-8b", "qwen2.5-7b", ...
  std::string arch = "llama";       // general.architecture: llama, qwen2, qwen3 or phi3
  int n_layers = 0;                 // num_hidden_layers
  int dim = 0;                      // hidden_size
  int n_heads = 0;                  // num_attention_heads
  int n_kv_heads = 0;               // num_key_value_heads
  int ffn_dim = 0;                  // intermediate_size
  int n_vocab = 0;                  // vocab_size
  int n_ctx = 0;                    // max_position_embeddings
  float rope_freq_base = 10000.0f;  // rope_theta
  float rms_eps = 1e-5f;            // rms_norm_eps
  bool tied_output = false;         // tie_word_embeddings: no output.weight
  // rope_scaling of type "llama3" (factor 0: none). As llama.cpp's converter
  // does, it becomes the tensor rope_freqs.weight [head_dim / 2].
  float rope_scale_factor = 0.0f;
  float rope_low_freq_factor = 0.0f;
  float rope_high_freq_factor = 0.0f;
  int rope_original_ctx = 0;
  // Phi-3 (arch phi3): LongRoPE (rope_factors_short/long [head_dim / 2],
  // ones; phi3.rope.scaling.attn_factor and original_context_length =
  // rope_original_ctx) and its stated sliding window (not applied).
  float attn_factor = 0.0f;
  int sliding_window = 0;

  int head_dim() const { return dim / n_heads; }
  bool qkv_bias() const { return arch == "qwen2"; }  // attn_{q,k,v}.bias, F32
  bool qk_norm() const { return arch == "qwen3"; }   // attn_{q,k}_norm [head_dim], F32
  bool fused() const { return arch == "phi3"; }      // attn_qkv and ffn_up [2 ffn]
};

// The named real shapes, in a fixed order.
const std::vector<ModelShape>& model_shapes();
// nullptr for an unknown name.
const ModelShape* find_model_shape(std::string_view name);

// Weight types a shaped model can be written in, by their lower-case names:
// "q4_0", "q8_0", "q4_k" -> nullopt for anything else.
std::optional<GgmlType> shaped_weight_type(std::string_view name);
std::vector<std::string_view> shaped_weight_type_names();

// One tensor of the file: GGUF name, type, ne (ne[0] = row length) and bytes.
struct PlannedTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> ne;
  int64_t elements = 0;
  size_t bytes = 0;
};

// Every tensor of the file in write order, computed without writing any data:
// token_embd, [rope_freqs], per layer attn_norm, attn_q/k/v (or attn_qkv),
// [their biases], [attn_q/k_norm], attn_output, ffn_norm, ffn_gate/up (or the
// fused ffn_up), ffn_down, then output_norm, [output] and [Phi-3's
// rope_factors_long/short]. Matrices and token_embd in `type`; norms,
// biases and RoPE factors in F32. Throws InputError when a row length is
// not a whole number of `type`'s blocks.
std::vector<PlannedTensor> plan_shaped_model(const ModelShape& shape, GgmlType type);

// Writes the file atomically (temp + rename), streaming the weights.
// Metadata: ARCH.* hyper-parameters, general.file_type, a SentencePiece-style
// vocabulary of exactly shape.n_vocab tokens (write_padded_spm_vocab).
// Weights are a function of (seed, tensor, row) only.
void write_shaped_model(const std::string& path, const ModelShape& shape, GgmlType type,
                        uint64_t seed);

// n_blocks random blocks of `type` (Q4_0, Q8_0, Q4_K) whose values have root
// mean square about `rms` and mean about 0, from the 64-bit `stream`
// (deterministic). Q4_0: uniform 4-bit codes, d = +-rms/sqrt(21.5) with a
// random sign per block (codes -8..7 lean negative; the sign cancels that).
// Q8_0: uniform codes -127..127, d = rms/73.9. Q4_K: uniform 4-bit codes,
// sub-block scales uniform in 4..35 with min = scale and dmin = 7.5 d, so every
// sub-block is centred: x = d * sc * (q - 7.5).
void random_quant_blocks(GgmlType type, float rms, uint64_t stream, uint8_t* dst, int64_t n_blocks);

}  // namespace kvbench
