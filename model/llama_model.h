// A loaded LLaMA GGUF: the mapped file, its validated hyper-parameters and
// weight views, tokenizer and chat template. Immutable after load; any number
// of evaluators (and caches) can share it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/gguf/gguf.h"
#include "model/llama_config.h"
#include "model/llama_weights.h"
#include "model/ops/kv_cache.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/tokenizer.h"

namespace kvbench {

class LlamaModel {
 public:
  // Throws InputError("<path>: <what>") for any problem with the file.
  // planar_copies: give the matrices the planar copies that the decode
  // kernels of both modes read (model/ops/planar.h; add_planar_copies, one more
  // copy of those weights in memory). Callers that never multiply (info,
  // tokenizing) pass false.
  // context: the most tokens one sequence will hold (llama.cpp's context
  // per sequence). It matters only for a LongRoPE file (Phi-3 of long
  // context), which takes its long RoPE factors when context exceeds its
  // original context, as llama.cpp does; 0 (or any context within the
  // original) takes the short ones.
  static std::unique_ptr<LlamaModel> load(const std::string& path, bool planar_copies = true,
                                          int64_t context = 0);

  // Whether this model computes as one loaded for `context` would (false
  // only for a LongRoPE file on the other side of its original context:
  // load it again with that context).
  bool fits_context(int64_t context) const;
  // Loads `model`'s file again for `context` when it does not fit it (with
  // the weight copies; the first model is freed before, so that a 7B file
  // is never held twice). Callers load once to tokenize, then call this.
  static void reload_for_context(std::unique_ptr<LlamaModel>& model, int64_t context);

  const GgufFile& file() const { return *file_; }
  const LlamaConfig& config() const { return config_; }
  const LlamaWeights& weights() const { return weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ChatTemplate& chat_template() const { return chat_template_; }
  KvShape kv_shape() const;

 private:
  std::unique_ptr<GgufFile> file_;
  LlamaConfig config_;
  LlamaWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
  ChatTemplate chat_template_;
};

// The model path used when none is given: $KVBENCH_MODEL, else
// models/SmolLM2-135M-Instruct.Q4_1.gguf.
std::string default_model_path();

}  // namespace kvbench
