// Hyper-parameters of a GGUF file of an architecture kvbench runs, read and
// validated once. The fields below are shared by every architecture and read
// from the keys under its name (llama.block_count, gemma3.block_count, ...);
// what one architecture adds lives in its own struct (Gemma3Config).
#pragma once

#include <string>
#include <string_view>

#include "model/gemma3_config.h"
#include "model/ops/rope.h"

namespace kvbench {

class GgufFile;

// general.architecture of the files kvbench runs. Each has its forward pass
// (Evaluator::step dispatches: model/evaluator.cpp for llama,
// model/gemma3_forward.cpp for gemma3) over the same kernels and cache.
enum class Arch { Llama, Gemma3 };

struct LlamaConfig {
  Arch arch = Arch::Llama;
  std::string arch_name = "llama";  // general.architecture: the key prefix ARCH.
  std::string name;       // general.name (display only)
  int n_layers = 0;       // ARCH.block_count
  int dim = 0;            // ARCH.embedding_length
  int ffn_dim = 0;        // ARCH.feed_forward_length
  int n_heads = 0;        // ARCH.attention.head_count
  int n_kv_heads = 0;     // ARCH.attention.head_count_kv (GQA: n_heads % n_kv_heads == 0)
  int head_dim = 0;       // dim / n_heads (or ARCH.attention.key_length)
  int n_vocab = 0;        // rows of token_embd.weight
  int n_ctx_train = 0;    // ARCH.context_length
  float rms_eps = 1e-5f;  // ARCH.attention.layer_norm_rms_epsilon
  // RoPE (of the global layers for gemma3): n_dims, freq_base, linear
  // scaling, llama3 freq factors; neox for gemma3 (rope.h).
  RopeConfig rope;
  Gemma3Config gemma3;    // arch == Gemma3 only

  int kv_mul() const { return n_heads / n_kv_heads; }  // query heads per KV head
  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
};

// Whether kvbench runs files of this general.architecture.
bool runs_architecture(std::string_view arch);

// Throws InputError("<path>: ...") for an architecture kvbench does not run
// (it runs llama and gemma3), a missing or out-of-range key, or inconsistent
// sizes.
LlamaConfig read_llama_config(const GgufFile& file);

}  // namespace kvbench
