// What a Phi-3 GGUF (Phi-3, Phi-3.5, Phi-4-mini: general.architecture
// "phi3") sets beyond the shared hyper-parameters, read as llama.cpp reads
// it: NEOX RoPE with LongRoPE's attention factor, fused tensors (Wq/Wk/Wv in
// attn_qkv, W_gate/W_up in ffn_up), and a stated sliding window that is not
// applied (llama.cpp disables Phi's, so every layer is global). The short
// and long RoPE factors are tensors: the weights loader reads them.
#pragma once

namespace kvbench {

class GgufFile;
struct LlamaConfig;

// Fills c's block fields from the file (c's shared fields already read).
// Throws InputError("<path>: ...") for an out-of-range key.
void read_phi3_config(const GgufFile& file, LlamaConfig& c);

// A llama file (LLaMA, Mistral) may state llama.attention.sliding_window;
// llama.cpp's llama graph ignores it, and so does kvbench (recorded in
// c.unapplied_sliding_window for info).
void read_llama_extras(const GgufFile& file, LlamaConfig& c);

}  // namespace kvbench
