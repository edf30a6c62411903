// The tensors a Gemma 3 block has beyond a LLaMA block: RMS norms of the
// queries and keys (per head), and of the attention and feed-forward outputs
// before they join the residual stream.
#pragma once

#include <string>

#include "model/llama_config.h"
#include "model/llama_weights.h"

namespace kvbench {

class ModelTensors;

// Reads blk.N.attn_q_norm / attn_k_norm ([head_dim]) and post_attention_norm /
// post_ffw_norm ([dim]) into L; `prefix` is "blk.N.". The file stores these
// (like every Gemma 3 norm) as 1 + w, the form the forward multiplies by.
void load_gemma3_norms(ModelTensors& tensors, const LlamaConfig& c, const std::string& prefix,
                       LayerWeights& L);

}  // namespace kvbench
