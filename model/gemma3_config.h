// What a Gemma 3 GGUF adds to the shared hyper-parameters (LlamaConfig): the
// local/global layer pattern with its sliding window and local RoPE, the
// attention scale, the embedding scale and the optional final logit
// soft-capping. Read from the file's gemma3.* keys with llama.cpp's defaults.
#pragma once

#include <cstdint>
#include <vector>

#include "model/ops/rope.h"

namespace kvbench {

class GgufFile;
struct LlamaConfig;

struct Gemma3Config {
  // gemma3.attention.sliding_window: a local layer's query at p attends the
  // keys at (p - window, p]. 0: every layer is global.
  int32_t sliding_window = 0;
  // [n_layers] true for a local (sliding-window) layer. From
  // gemma3.attention.sliding_window_pattern: an array of booleans, or a
  // period n (layer l is global when l % n == n - 1); default period 6.
  std::vector<bool> local;
  // Layer l's window: sliding_window on a local layer, 0 on a global one.
  int32_t window_of(int l) const { return sliding_window > 0 && local[l] ? sliding_window : 0; }
  // Local layers' RoPE: base gemma3.rope.freq_base_swa (default 10,000);
  // global layers use LlamaConfig::rope (gemma3.rope.freq_base).
  RopeConfig rope_local;
  // Scores are q . k * attn_scale: gemma3.attention.scale when present, else
  // 1 / sqrt(query_pre_attn_scalar) as llama.cpp derives it (the head
  // dimension; dim / n_heads for the 62-layer 27B).
  float attn_scale = 0.0f;
  float embed_scale = 1.0f;           // token embeddings are multiplied by sqrt(dim)
  float final_logit_softcap = 0.0f;   // gemma3.final_logit_softcapping; 0: none
};

// Fills c.gemma3 from the file (c's shared fields already read). Throws
// InputError("<path>: ...") for an out-of-range or inconsistent key.
void read_gemma3_config(const GgufFile& file, LlamaConfig& c);

}  // namespace kvbench
