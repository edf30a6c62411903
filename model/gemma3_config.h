// What a Gemma 3 GGUF sets beyond the shared hyper-parameters: its block
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

}  // namespace kvbench
