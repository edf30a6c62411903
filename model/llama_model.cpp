#include "model/llama_model.h"

#include <cstdlib>

#include "model/common/error.h"

namespace kvbench {

namespace {

// Whether a model of this config takes LongRoPE's long factors for a
// context of `context` tokens per sequence (llama_model::get_rope_factors).
bool long_rope_for(const LlamaConfig& c, int64_t context) {
  return !c.rope_long_factors.empty() && context > c.n_ctx_orig;
}

}  // namespace

std::unique_ptr<LlamaModel> LlamaModel::load(const std::string& path, bool planar_copies,
                                             int64_t context) {
  auto m = std::unique_ptr<LlamaModel>(new LlamaModel());
  m->file_ = GgufFile::open(path);
  m->config_ = read_llama_config(*m->file_);
  m->weights_ = load_llama_weights(*m->file_, m->config_);
  // Every RoPE table (the evaluator's, the caches' re-rotations, the scorers'
  // un-rotations) is made from rope.freq_factors, so the swap is the choice.
  if (long_rope_for(m->config_, context)) {
    m->config_.rope.freq_factors = m->config_.rope_long_factors;
    m->config_.rope_long_active = true;
  }
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

bool LlamaModel::fits_context(int64_t context) const {
  return long_rope_for(config_, context) == config_.rope_long_active;
}

void LlamaModel::reload_for_context(std::unique_ptr<LlamaModel>& model, int64_t context) {
  if (model->fits_context(context)) return;
  const std::string path = model->file().path();
  model.reset();
  model = load(path, true, context);
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
