#include "model/llama_model.h"

#include <cstdlib>

#include "model/common/error.h"

namespace kvbench {

std::unique_ptr<LlamaModel> LlamaModel::load(const std::string& path, bool planar_copies) {
  auto m = std::unique_ptr<LlamaModel>(new LlamaModel());
  m->file_ = GgufFile::open(path);
  m->config_ = read_llama_config(*m->file_);
  m->weights_ = load_llama_weights(*m->file_, m->config_);
  if (planar_copies) add_planar_copies(m->weights_, default_cpu_path());
  m->tokenizer_ = Tokenizer::from_gguf(*m->file_);
  // One embedding row per token, as llama.cpp requires: a row without a token
  // would be a logit the tokenizer cannot decode.
  if (m->tokenizer_->n_vocab() != m->config_.n_vocab)
    throw InputError(path + ": tokenizer.ggml.tokens has " +
                     std::to_string(m->tokenizer_->n_vocab()) +
                     " tokens, but tensor 'token_embd.weight' has " +
                     std::to_string(m->config_.n_vocab) + " rows");
  m->chat_template_ = ChatTemplate::from_gguf(*m->file_);
  return m;
}

KvShape LlamaModel::kv_shape() const {
  KvShape s;
  s.n_layers = config_.n_layers;
  s.n_kv_heads = config_.n_kv_heads;
  s.n_q_heads = config_.n_heads;
  s.head_dim = config_.head_dim;
  return s;
}

std::string default_model_path() {
  if (const char* env = std::getenv("KVBENCH_MODEL"); env && *env) return env;
  return "models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

}  // namespace kvbench
