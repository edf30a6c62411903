// Hyper-parameters of a LLaMA-architecture GGUF file, read and validated once.
#pragma once

#include <string>

#include "model/ops/rope.h"

namespace kvbench {

class GgufFile;

struct LlamaConfig {
  std::string name;       // general.name (display only)
  int n_layers = 0;       // llama.block_count
  int dim = 0;            // llama.embedding_length
  int ffn_dim = 0;        // llama.feed_forward_length
  int n_heads = 0;        // llama.attention.head_count
  int n_kv_heads = 0;     // llama.attention.head_count_kv (GQA: n_heads % n_kv_heads == 0)
  int head_dim = 0;       // dim / n_heads (or llama.attention.key_length)
  int n_vocab = 0;        // rows of token_embd.weight
  int n_ctx_train = 0;    // llama.context_length
  float rms_eps = 1e-5f;  // llama.attention.layer_norm_rms_epsilon
  RopeConfig rope;        // n_dims, freq_base, linear scaling, llama3 freq factors

  int kv_mul() const { return n_heads / n_kv_heads; }  // query heads per KV head
  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
};

// Throws InputError("<path>: ...") for a non-llama architecture, a missing or
// out-of-range key, or inconsistent sizes.
LlamaConfig read_llama_config(const GgufFile& file);

}  // namespace kvbench
