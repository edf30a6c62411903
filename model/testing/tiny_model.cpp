#include "model/testing/tiny_model.h"

#include <cmath>
#include <string>

#include "model/gguf/gguf_writer.h"

namespace kvbench {
namespace {

// splitmix64 + Box-Muller: a portable normal stream for a given seed.
class Normal {
 public:
  explicit Normal(uint64_t seed) : state_(seed) {}
  float next() {
    const double u1 = (static_cast<double>(bits() >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = static_cast<double>(bits() >> 11) * 0x1.0p-53;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }

 private:
  uint64_t bits() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

std::vector<float> random_values(Normal& rng, int64_t n, float scale, float offset = 0.0f) {
  std::vector<float> v(n);
  for (auto& x : v) x = offset + scale * rng.next();
  return v;
}

GgufWriter build_tiny_model(const TinyModelOptions& o) {
  using S = TinyModelShape;
  using G = TinyGemma3Shape;
  const int head_dim = o.gemma3 ? G::head_dim : S::dim / S::n_heads;
  const int q_dim = S::n_heads * head_dim;
  const int kv_dim = S::n_kv_heads * head_dim;
  const int n_vocab = tiny_vocab_size(o.vocab);
  Normal rng(o.seed);

  GgufWriter w;
  const std::string arch = o.gemma3 ? "gemma3" : "llama";
  const std::string a = arch + ".";
  w.set_string("general.architecture", arch);
  w.set_string("general.name", o.gemma3 ? "kvbench-tiny-gemma3" : "kvbench-tiny");
  w.set_u32(a + "block_count", S::n_layers);
  w.set_u32(a + "context_length", S::n_ctx);
  w.set_u32(a + "embedding_length", S::dim);
  w.set_u32(a + "feed_forward_length", S::ffn_dim);
  w.set_u32(a + "attention.head_count", S::n_heads);
  w.set_u32(a + "attention.head_count_kv", S::n_kv_heads);
  if (o.gemma3) {
    w.set_u32(a + "attention.key_length", head_dim);
    w.set_u32(a + "attention.value_length", head_dim);
    w.set_f32(a + "rope.freq_base", G::rope_base);
    w.set_u32(a + "attention.sliding_window", G::sliding_window);
    w.set_u32(a + "attention.sliding_window_pattern", G::pattern);
    w.set_f32(a + "final_logit_softcapping", G::softcap);
    w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  } else {
    w.set_f32(a + "rope.freq_base", 10000.0f);
    w.set_u32(a + "rope.dimension_count", head_dim);
    w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  }
  w.set_u32(a + "vocab_size", n_vocab);
  write_tiny_vocab(w, o.vocab);

  // Scales keep activations O(1) through the random layers so that attention
  // is neither uniform nor one-hot.
  const float embd_scale = o.gemma3 ? 0.1f : 1.0f, mat_scale = 0.15f;
  w.add_tensor_f32("token_embd.weight", GgmlType::Q8_0, {S::dim, n_vocab},
                   random_values(rng, int64_t{S::dim} * n_vocab, embd_scale));
  // Per layer, a different type for most tensors (rows of `cols` elements).
  const GgmlType q_types[] = {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::F16};
  const GgmlType k_types[] = {GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::BF16};
  const GgmlType v_types[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::F32};
  const GgmlType o_types[] = {GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q4_1};
  const GgmlType gate_types[] = {GgmlType::F16, GgmlType::Q4_1, GgmlType::Q5_0};
  const GgmlType up_types[] = {GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0};
  const GgmlType down_types[] = {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0};
  for (int l = 0; l < S::n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const int t = l % 3;
    w.add_tensor_f32(p + "attn_norm.weight", GgmlType::F32, {S::dim},
                     random_values(rng, S::dim, 0.1f, 1.0f));
    w.add_tensor_f32(p + "attn_q.weight", q_types[t], {S::dim, q_dim},
                     random_values(rng, S::dim * q_dim, mat_scale));
    w.add_tensor_f32(p + "attn_k.weight", k_types[t], {S::dim, kv_dim},
                     random_values(rng, S::dim * kv_dim, mat_scale));
    w.add_tensor_f32(p + "attn_v.weight", v_types[t], {S::dim, kv_dim},
                     random_values(rng, S::dim * kv_dim, mat_scale));
    w.add_tensor_f32(p + "attn_output.weight", o_types[t], {q_dim, S::dim},
                     random_values(rng, q_dim * S::dim, mat_scale));
    w.add_tensor_f32(p + "ffn_norm.weight", GgmlType::F32, {S::dim},
                     random_values(rng, S::dim, 0.1f, 1.0f));
    w.add_tensor_f32(p + "ffn_gate.weight", gate_types[t], {S::dim, S::ffn_dim},
                     random_values(rng, S::dim * S::ffn_dim, mat_scale));
    w.add_tensor_f32(p + "ffn_up.weight", up_types[t], {S::dim, S::ffn_dim},
                     random_values(rng, S::dim * S::ffn_dim, mat_scale));
    w.add_tensor_f32(p + "ffn_down.weight", down_types[t], {S::ffn_dim, S::dim},
                     random_values(rng, S::ffn_dim * S::dim, mat_scale));
    if (o.gemma3) {
      // Norm weights as a Gemma converter stores them: 1 + w.
      w.add_tensor_f32(p + "attn_q_norm.weight", GgmlType::F32, {head_dim},
                       random_values(rng, head_dim, 0.1f, 1.0f));
      w.add_tensor_f32(p + "attn_k_norm.weight", GgmlType::F32, {head_dim},
                       random_values(rng, head_dim, 0.1f, 1.0f));
      w.add_tensor_f32(p + "post_attention_norm.weight", GgmlType::F32, {S::dim},
                       random_values(rng, S::dim, 0.1f, 1.0f));
      w.add_tensor_f32(p + "post_ffw_norm.weight", GgmlType::F32, {S::dim},
                       random_values(rng, S::dim, 0.1f, 1.0f));
    }
  }
  w.add_tensor_f32("output_norm.weight", GgmlType::F32, {S::dim},
                   random_values(rng, S::dim, 0.1f, 1.0f));
  if (!o.tied_output)
    w.add_tensor_f32("output.weight", GgmlType::F16, {S::dim, n_vocab},
                     random_values(rng, int64_t{S::dim} * n_vocab, 0.3f));
  return w;
}

}  // namespace

std::vector<uint8_t> make_tiny_model(const TinyModelOptions& options) {
  return build_tiny_model(options).to_bytes();
}

void write_tiny_model(const std::string& path, const TinyModelOptions& options) {
  build_tiny_model(options).write(path);
}

}  // namespace kvbench
