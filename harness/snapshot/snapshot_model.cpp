#include "harness/snapshot/snapshot_model.h"

#include <filesystem>

#include "harness/sha256.h"

namespace kvbench {

ModelIdentity model_identity(const LlamaModel& model) {
  const LlamaConfig& c = model.config();
  ModelIdentity id;
  id.sha256 = sha256_file(model.file().path());
  id.file_bytes = model.file().file_size();
  const auto& f = c.rope.freq_factors;
  id.hparams = {
      {"n_layers", c.n_layers},
      {"dim", c.dim},
      {"ffn_dim", c.ffn_dim},
      {"n_heads", c.n_heads},
      {"n_kv_heads", c.n_kv_heads},
      {"head_dim", c.head_dim},
      {"n_vocab", c.n_vocab},
      {"n_ctx_train", c.n_ctx_train},
      {"rms_eps", c.rms_eps},
      {"rope_dims", c.rope.n_dims},
      {"rope_base", c.rope.freq_base},
      {"rope_scale", c.rope.freq_scale},
      // llama3-style divisors, by content (none for most models)
      {"rope_factors", f.empty() ? std::string("none")
                                 : "sha256:" + sha256_hex(f.data(), f.size() * sizeof(float))}};
  id.tokenizer = model.tokenizer().fingerprint();
  return id;
}

std::string activations_name(MatmulMode mode, AttentionMode attention) {
  if (mode == MatmulMode::Exact) return "f32";
  return std::string("q8") + (attention.bf16 ? "+bf16-attn" : "") +
         (attention.int8_query ? "+i8q" : "");
}

}  // namespace kvbench
