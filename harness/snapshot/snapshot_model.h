// The identity a cache snapshot records of its model: the GGUF file's sha256
// and size, the hyper-parameters the cache depends on, and the tokenizer's
// fingerprint (harness/snapshot/snapshot_file.h compares them field by field).
#pragma once

#include <string>

#include "harness/snapshot/snapshot_file.h"
#include "model/attention_mode.h"
#include "model/llama_model.h"
#include "model/ops/matmul.h"

namespace kvbench {

// Hashes the model file (about 0.1 s for the 98 MB default model).
ModelIdentity model_identity(const LlamaModel& model);

// "f32" (MatmulMode::Exact), "q8" (MatmulMode::Quantized), with
// "+bf16-attn" (bf16 prefill attention) and / or "+i8q" (int8-query decode
// scores) after it, in that order (model/attention_mode.h): a state made with
// one is not another's.
std::string activations_name(MatmulMode mode, AttentionMode attention = {});

}  // namespace kvbench
