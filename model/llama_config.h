// Hyper-parameters of a GGUF file of an architecture kvbench runs, read and
// validated once. The sizes are read from the keys under the architecture's
// name (llama.block_count, gemma3.block_count, ...). The rest describes the
// transformer block as plain fields: which norms it has, its activation, its
// scales and soft-caps, which layers attend over a sliding window. An
// architecture is a setting of these fields (LLaMA: the defaults; Gemma 3:
// read_gemma3_config; Qwen2 and Qwen3: qwen_config.h), which the one block
// (model/transformer_block.cpp) runs: the forward pass never asks which
// architecture it is. Weights the file may or may not have (Q/K/V biases, a
// separate output matrix) are the weights loader's (llama_weights.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/ops/rope.h"

namespace kvbench {

class GgufFile;

// The RMS norms of a block. Each has its weight tensor in the file (named in
// the comment) and is loaded only when on; the weights are used as stored
// (Gemma's converter already wrote its 1 + w).
struct BlockNorms {
  bool pre_attention = true;    // blk.N.attn_norm [dim]: on x before Wq, Wk, Wv
  bool qk = false;              // blk.N.attn_q_norm / attn_k_norm [head_dim]: per head, before RoPE
  bool post_attention = false;  // blk.N.post_attention_norm [dim]: on Wo's output
  bool pre_ffn = true;          // blk.N.ffn_norm [dim]: on x before W_gate, W_up
  bool post_ffn = false;        // blk.N.post_ffw_norm [dim]: on W_down's output
};

// The gate of the gated feed-forward, act(W_gate x) * W_up x.
enum class Activation {
  Silu,      // SwiGLU (LLaMA): model/ops/silu.h
  GeluTanh,  // GeGLU (Gemma): GELU's tanh approximation, model/ops/gelu.h
};

struct LlamaConfig {
  std::string arch_name = "llama";  // general.architecture: the key prefix ARCH.
  std::string name;                 // general.name (display only)
  int n_layers = 0;                 // ARCH.block_count
  int dim = 0;                      // ARCH.embedding_length
  int ffn_dim = 0;                  // ARCH.feed_forward_length
  int n_heads = 0;                  // ARCH.attention.head_count
  int n_kv_heads = 0;               // ARCH.attention.head_count_kv (GQA: n_heads % n_kv_heads == 0)
  int head_dim = 0;                 // dim / n_heads (or ARCH.attention.key_length)
  int n_vocab = 0;                  // rows of token_embd.weight
  int n_ctx_train = 0;              // ARCH.context_length
  float rms_eps = 1e-5f;            // ARCH.attention.layer_norm_rms_epsilon
  // RoPE of the global layers: n_dims, freq_base, linear scaling, llama3
  // freq factors, pairing (rope.h).
  RopeConfig rope;

  // --- The block.
  BlockNorms norms;
  Activation activation = Activation::Silu;
  // Token embeddings are multiplied by this (Gemma: sqrt(dim)); 1: as stored.
  float embed_scale = 1.0f;
  // Scores are q . k * attn_scale; 0: 1 / sqrt(head_dim) (AttentionShape).
  float attn_scale = 0.0f;
  // Soft-capping, cap * tanh(x / cap); 0: none. Of the attention scores
  // (Gemma 2: AttentionShape::softcap) and of the output logits (Gemma 2
  // and 3).
  float attn_logit_softcap = 0.0f;
  float final_logit_softcap = 0.0f;

  // --- Local (sliding-window) and global layers.
  // A local layer's query at p attends the keys at (p - window, p]. 0: every
  // layer is global.
  int32_t sliding_window = 0;
  // [n_layers] true for a local layer (only read when sliding_window > 0).
  std::vector<bool> local;
  // The local layers' RoPE (its own base; the same pairing as `rope`).
  RopeConfig rope_local;

  int kv_mul() const { return n_heads / n_kv_heads; }  // query heads per KV head
  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
  bool is_local(int l) const { return sliding_window > 0 && local[l]; }
  // Layer l's window: sliding_window on a local layer, 0 on a global one.
  int32_t window_of(int l) const { return is_local(l) ? sliding_window : 0; }
  // --- What a file states that llama.cpp does not apply (info prints it).
  // The sliding window of a Phi-3 file (llama.cpp disables Phi's; every
  // layer attends every key) or of a llama file (Mistral: llama.cpp's llama
  // graph has no window): ARCH.attention.sliding_window, 0 if none.
  int32_t unapplied_sliding_window = 0;
  // LongRoPE (Phi-3 files of long context): two sets of RoPE divisors.
  // llama.cpp takes the long ones (rope_factors_long.weight) when its
  // context per sequence exceeds n_ctx_orig, else the short ones
  // (rope_factors_short.weight); LlamaModel::load does the same with the
  // context its caller states (rope_long_active), and rope.freq_factors
  // holds the set in use. rope_long_factors is the long set as read.
  std::vector<float> rope_long_factors;
  int n_ctx_orig = 0;  // phi3.rope.scaling.original_context_length (else context_length)
  bool rope_long_active = false;

  // --- Tensor layout. Phi-3 stores Wq, Wk, Wv as one matrix (blk.N.attn_qkv,
  // rows q then k then v; llama.cpp also takes the three apart) and W_gate,
  // W_up as one (blk.N.ffn_up, [2 * ffn_dim][dim], gate rows first: ggml's
  // swiglu gates with the first half). The loader takes them apart into row
  // views (rows of every GGML type are independent), so the block is the same.
  bool fused_qkv_allowed = false;
  bool fused_gate_up = false;

  const RopeConfig& rope_of(int l) const { return is_local(l) ? rope_local : rope; }
  bool has_local_layers() const {
    for (int l = 0; l < n_layers; ++l)
      if (is_local(l)) return true;
    return false;
  }
};

// Whether kvbench runs files of this general.architecture.
bool runs_architecture(std::string_view arch);
// The architectures it runs, for messages: "'llama', 'gemma3', ... and 'gemma2'".
std::string architecture_names();

// Throws InputError("<path>: ...") for an architecture kvbench does not run
// (architecture_names()), a missing or out-of-range key, or inconsistent
// sizes.
LlamaConfig read_llama_config(const GgufFile& file);

}  // namespace kvbench
