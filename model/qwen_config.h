// What Qwen2 (Qwen2, Qwen2.5, DeepSeek-R1-Distill-Qwen) and Qwen3 GGUF files
// set beyond the shared hyper-parameters. Both run LLaMA's block with NEOX
// RoPE (llama.cpp's LLAMA_ROPE_TYPE_NEOX for both); Qwen3 adds an RMS norm per
// head on Q and K before RoPE (blk.N.attn_q_norm / attn_k_norm), and Qwen2's
// biases on Q, K and V (blk.N.attn_{q,k,v}.bias) are read by the weights
// loader, as for any architecture whose file has them.
#pragma once

namespace kvbench {

class GgufFile;
struct LlamaConfig;

// Fill c's block fields (c's shared fields already read).
void read_qwen2_config(const GgufFile& file, LlamaConfig& c);
void read_qwen3_config(const GgufFile& file, LlamaConfig& c);

}  // namespace kvbench
