// Views of a LLaMA GGUF file's tensors, checked for name, shape and type.
// Matrices stay quantized in the mapping; norms are copied to f32.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/llama_config.h"
#include "model/ops/quant_dot.h"  // CpuPath
#include "model/ops/weight_matrix.h"

namespace kvbench {

class GgufFile;

// The norms are those LlamaConfig::norms names (the others empty), as stored
// (Gemma's converter stores 1 + w).
struct LayerWeights {
  std::vector<float> attn_norm;  // [dim] pre_attention
  WeightMatrix wq;               // [n_heads * head_dim][dim]
  WeightMatrix wk;               // [n_kv_heads * head_dim][dim]
  WeightMatrix wv;               // [n_kv_heads * head_dim][dim]
  WeightMatrix wo;               // [dim][n_heads * head_dim]
  std::vector<float> ffn_norm;   // [dim] pre_ffn
  WeightMatrix w_gate;           // [ffn_dim][dim]
  WeightMatrix w_up;             // [ffn_dim][dim]
  WeightMatrix w_down;           // [dim][ffn_dim]
  // qk, post_attention, post_ffn:
  std::vector<float> q_norm;          // [head_dim] attn_q_norm, per query head
  std::vector<float> k_norm;          // [head_dim] attn_k_norm, per KV head
  std::vector<float> attn_post_norm;  // [dim] post_attention_norm, on the attention output
  std::vector<float> ffn_post_norm;   // [dim] post_ffw_norm, on the feed-forward output
  // Biases added to Wq xn, Wk xn and Wv xn (before the QK-norms and RoPE),
  // loaded when the file has blk.N.attn_{q,k,v}.bias (Qwen2); empty: none.
  // All three or none, as llama.cpp's LLaMA-style graphs add them.
  std::vector<float> bq;  // [n_heads * head_dim]
  std::vector<float> bk;  // [n_kv_heads * head_dim]
  std::vector<float> bv;  // [n_kv_heads * head_dim]
};

struct LlamaWeights {
  WeightMatrix tok_embd;  // [n_vocab][dim]
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;  // [dim]
  WeightMatrix output;             // [n_vocab][dim]; = tok_embd when tied
  bool tied_output = false;
  // What the matrices' planar and interleaved pointers point into.
  std::shared_ptr<uint8_t[]> planar_storage;
};

// Throws InputError("<path>: ...") naming the tensor for a missing tensor, a
// wrong shape, a type kvbench cannot dequantize, or a tensor the
// hyper-parameters do not account for (model_tensors.h: a layer beyond
// ARCH.block_count, an unknown name); naming the key when ARCH.vocab_size
// differs from token_embd's rows. Also fills config.n_vocab and, when
// rope_freqs.weight is present, config.rope.freq_factors. Loads the norms
// config.norms names.
LlamaWeights load_llama_weights(const GgufFile& file, LlamaConfig& config);

// Gives the matrices the copies their kernels on `path` read:
// - a planar copy (model/ops/planar.h) where exact decode has a planar kernel
//   for the type: its scales come in plain vector loads;
// - an interleaved copy (model/ops/interleave.h) where the quantized products
//   have an interleaved kernel for the type and the rows are a multiple of 16:
//   quantized prefill and decode of the legacy types read only that.
// Each costs one more copy of those matrices in memory; returns the total
// size in bytes. KVBENCH_PLANAR=0 in the environment turns both off (for
// side-by-side speed measurements); any other value, or none, leaves them on.
size_t add_planar_copies(LlamaWeights& weights, CpuPath path);

}  // namespace kvbench
