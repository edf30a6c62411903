// What a Gemma 3 (and Gemma 2) GGUF sets beyond the shared hyper-parameters: its block
// (QK-norms and post-norms, GeGLU, NEOX RoPE, the attention and embedding
// scales, the optional final logit soft-capping) and its local/global layer
// pattern with the sliding window and the local layers' RoPE. Read from the
// file's gemma3.* keys with llama.cpp's defaults.
#pragma once

namespace kvbench {

class GgufFile;
struct LlamaConfig;

// Fills c's block fields from the file (c's shared fields already read).
// Throws InputError("<path>: ...") for an out-of-range or inconsistent key.
void read_gemma3_config(const GgufFile& file, LlamaConfig& c);

// Gemma 2 (general.architecture "gemma2"): Gemma 3's block without QK-norms,
// with attention soft-capping (gemma2.attn_logit_softcapping, default 50)
// and final soft-capping (default 30), every other layer local (window 4096
// unless stated), the local layers' RoPE the global one unless
// gemma2.rope.freq_base_swa says otherwise. Read as llama.cpp reads it.
void read_gemma2_config(const GgufFile& file, LlamaConfig& c);

}  // namespace kvbench
