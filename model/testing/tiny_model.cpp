#include "model/testing/tiny_model.h"

#include <cmath>
#include <string>

#include "model/common/error.h"
#include "model/gguf/gguf_writer.h"
#include "model/tokenizer/pretokenizer.h"

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

constexpr std::string_view kArchNames[] = {"llama", "gemma3", "qwen2", "qwen3", "phi3", "gemma2"};
constexpr std::string_view kWeightsNames[] = {"mixed", "f16",  "bf16",   "q8_0",
                                              "q4_0",  "q6_k", "q4_k_m", "q5_k_m"};

// The matrices of a block, for picking their types.
enum class Tensor { Q, K, V, O, Gate, Up, Down, Qkv };

// The type a row of `cols` elements is stored in: `want`, or, where its
// blocks do not divide the row, what llama-quantize falls back to (K-quants
// to Q5_0, Q5_1 or Q8_0 for rows not a multiple of 256; legacy types to F16
// for rows not a multiple of 32).
GgmlType fitting(GgmlType want, int64_t cols) {
  if (row_is_whole(want, cols)) return want;
  switch (want) {
    case GgmlType::Q4_K:
      return fitting(GgmlType::Q5_0, cols);
    case GgmlType::Q5_K:
      return fitting(GgmlType::Q5_1, cols);
    case GgmlType::Q6_K:
      return fitting(GgmlType::Q8_0, cols);
    default:
      return GgmlType::F16;
  }
}

// llama-quantize's use_more_bits: the K_M mixes give these layers' attn_v
// and ffn_down 6 bits.
bool more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

GgmlType matrix_type(TinyWeights w, Tensor t, int layer, int n_layers) {
  // The tests' mix, per layer (l % 3), so the loader and kernels meet most types.
  static constexpr GgmlType mix[7][3] = {
      {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::F16},   // Q
      {GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::BF16},  // K
      {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::F32},   // V
      {GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q4_1},  // O
      {GgmlType::F16, GgmlType::Q4_1, GgmlType::Q5_0},   // gate
      {GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0},  // up
      {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0},  // down
  };
  const bool k_m = w == TinyWeights::Q4_K_M || w == TinyWeights::Q5_K_M;
  // llama-quantize's fused attn_qkv: one step up in the K_M mixes; the
  // tests' mix gives it Q's type.
  if (t == Tensor::Qkv) {
    if (w == TinyWeights::Q4_K_M) return GgmlType::Q5_K;
    if (w == TinyWeights::Q5_K_M) return GgmlType::Q6_K;
    t = Tensor::Q;
  }
  if (k_m && (t == Tensor::V || t == Tensor::Down) && more_bits(layer, n_layers))
    return GgmlType::Q6_K;
  switch (w) {
    case TinyWeights::Mixed:
      return mix[static_cast<int>(t)][layer % 3];
    case TinyWeights::F16:
      return GgmlType::F16;
    case TinyWeights::BF16:
      return GgmlType::BF16;
    case TinyWeights::Q8_0:
      return GgmlType::Q8_0;
    case TinyWeights::Q4_0:
      return GgmlType::Q4_0;
    case TinyWeights::Q6_K:
      return GgmlType::Q6_K;
    case TinyWeights::Q4_K_M:
      return GgmlType::Q4_K;
    case TinyWeights::Q5_K_M:
      return GgmlType::Q5_K;
  }
  return GgmlType::F32;
}

// token_embd (and, untied, output.weight).
GgmlType embedding_type(TinyWeights w, bool output) {
  switch (w) {
    case TinyWeights::Mixed:
      return output ? GgmlType::F16 : GgmlType::Q8_0;
    case TinyWeights::Q4_K_M:
      return output ? GgmlType::Q6_K : GgmlType::Q4_K;
    case TinyWeights::Q5_K_M:
      return output ? GgmlType::Q6_K : GgmlType::Q5_K;
    default:
      return matrix_type(w, Tensor::Q, 0, 1);
  }
}

void check_size(const char* what, int v, int max) {
  if (v < 1 || v > max)
    throw InputError(std::string("tiny model: ") + what + " " + std::to_string(v) +
                     " is out of range [1, " + std::to_string(max) + "]");
}

GgufWriter build_tiny_model(const TinyModelOptions& o) {
  using S = TinyModelShape;
  using G = TinyGemma3Shape;
  const bool gemma3 = o.arch == TinyArch::Gemma3;
  const bool gemma2 = o.arch == TinyArch::Gemma2;
  const bool gemma = gemma3 || gemma2;  // post-norms, GeGLU, own head size, small embeddings
  const bool qwen = o.arch == TinyArch::Qwen2 || o.arch == TinyArch::Qwen3;
  const bool phi3 = o.arch == TinyArch::Phi3;
  using P = TinyPhi3Shape;
  const int dim = o.dim ? o.dim : S::dim;
  const int n_heads = o.n_heads ? o.n_heads : S::n_heads;
  const int n_kv_heads = o.n_kv_heads ? o.n_kv_heads : S::n_kv_heads;
  const int ffn_dim = o.ffn_dim ? o.ffn_dim : S::ffn_dim;
  check_size("dim", dim, 4096);
  check_size("head count", n_heads, 256);
  check_size("KV head count", n_kv_heads, 256);
  check_size("feed-forward size", ffn_dim, 16384);
  if (n_heads % n_kv_heads != 0)
    throw InputError("tiny model: " + std::to_string(n_heads) + " heads are not a multiple of " +
                     std::to_string(n_kv_heads) + " KV heads");
  const int head_dim = o.head_dim ? o.head_dim : gemma ? G::head_dim : dim / n_heads;
  check_size("head dimension", head_dim, 1024);
  if (head_dim % 2 != 0)
    throw InputError("tiny model: head dimension " + std::to_string(head_dim) + " is odd");
  const int q_dim = n_heads * head_dim;
  const int kv_dim = n_kv_heads * head_dim;
  if (!o.pre.empty() && o.vocab != TinyVocabKind::Bpe)
    throw InputError("tiny model: a pre-tokenizer applies to the BPE vocabulary only");
  if (!o.pre.empty() && !PreTokenizer::create(o.pre))
    throw InputError("tiny model: unknown pre-tokenizer '" + o.pre + "'");
  const int n_vocab = o.pre.empty() ? tiny_vocab_size(o.vocab) : tiny_vocab_with_pre_size();
  Normal rng(o.seed);

  GgufWriter w;
  const std::string arch(tiny_arch_name(o.arch));
  const std::string a = arch + ".";
  w.set_string("general.architecture", arch);
  // A name that says phi3 gives the file Phi-3's special-token strip flags
  // (llama.cpp's rule, and kvbench's); llama.cpp fails to load such a file
  // unless the vocabulary has <unk>, <s>, </s> and <|endoftext|>, which only
  // the Phi3 vocabulary has. So Phi-3 files with another vocabulary are
  // "...-phi", and the Phi3 vocabulary always says phi3.
  w.set_string("general.name", o.vocab == TinyVocabKind::Phi3 ? "kvbench-tiny-phi3"
                               : o.arch == TinyArch::Llama    ? "kvbench-tiny"
                               : phi3                         ? "kvbench-tiny-phi"
                                                              : "kvbench-tiny-" + arch);
  w.set_u32(a + "block_count", S::n_layers);
  w.set_u32(a + "context_length", S::n_ctx);
  w.set_u32(a + "embedding_length", dim);
  w.set_u32(a + "feed_forward_length", ffn_dim);
  w.set_u32(a + "attention.head_count", n_heads);
  w.set_u32(a + "attention.head_count_kv", n_kv_heads);
  if (gemma || head_dim * n_heads != dim) {
    w.set_u32(a + "attention.key_length", head_dim);
    w.set_u32(a + "attention.value_length", head_dim);
  }
  if (gemma3) {
    w.set_f32(a + "rope.freq_base", G::rope_base);
    w.set_u32(a + "attention.sliding_window", G::sliding_window);
    w.set_u32(a + "attention.sliding_window_pattern", G::pattern);
    w.set_f32(a + "final_logit_softcapping", G::softcap);
    w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  } else if (gemma2) {
    w.set_f32(a + "rope.freq_base", TinyGemma2Shape::rope_base);
    w.set_u32(a + "attention.sliding_window", G::sliding_window);
    w.set_f32(a + "attn_logit_softcapping", TinyGemma2Shape::attn_softcap);
    w.set_f32(a + "final_logit_softcapping", G::softcap);
    w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  } else if (qwen) {
    // Qwen2.5's and Qwen3's base and epsilon.
    w.set_f32(a + "rope.freq_base", 1000000.0f);
    w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  } else if (phi3) {
    w.set_f32(a + "rope.freq_base", 10000.0f);
    w.set_u32(a + "rope.dimension_count", head_dim);
    w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_u32(a + "rope.scaling.original_context_length", P::original_context);
    w.set_f32(a + "rope.scaling.attn_factor", P::attn_factor);
  } else {
    w.set_f32(a + "rope.freq_base", 10000.0f);
    w.set_u32(a + "rope.dimension_count", head_dim);
    w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  }
  if (gemma2 && !o.tied_output)
    throw InputError(
        "tiny model: gemma2 ties its output to token_embd (llama.cpp reads no "
        "output.weight)");
  if (o.sliding_window < 0 || o.sliding_window > (1 << 20))
    throw InputError("tiny model: sliding window " + std::to_string(o.sliding_window) +
                     " is out of range [0, 1048576]");
  if (o.sliding_window > 0 && o.arch != TinyArch::Llama && !phi3)
    throw InputError("tiny model: a stated sliding window is for --arch llama or phi3");
  if (phi3 || o.sliding_window > 0)
    w.set_u32(a + "attention.sliding_window",
              o.sliding_window > 0 ? o.sliding_window : P::sliding_window);
  w.set_u32(a + "vocab_size", n_vocab);
  if (o.pre.empty())
    write_tiny_vocab(w, o.vocab);
  else
    write_tiny_vocab_with_pre(w, o.pre);

  // Scales keep activations O(1) through the random layers so that attention
  // is neither uniform nor one-hot (0.15 at the default width of 96).
  // A wider file scales both by sqrt(96 / dim), so its logits stay about
  // as large as the default's (tens, not hundreds).
  const float widen = dim == S::dim ? 1.0f : std::sqrt(static_cast<float>(S::dim) / dim);
  const float embd_scale = (gemma ? 0.1f : 1.0f) * widen;
  const float mat_scale = 0.15f * widen;
  auto matrix = [&](const std::string& name, GgmlType type, int cols, int rows, float scale) {
    w.add_tensor_f32(name, fitting(type, cols), {cols, rows},
                     random_values(rng, int64_t{cols} * rows, scale));
  };
  auto vector = [&](const std::string& name, int n, float scale, float offset) {
    w.add_tensor_f32(name, GgmlType::F32, {n}, random_values(rng, n, scale, offset));
  };
  matrix("token_embd.weight", embedding_type(o.weights, false), dim, n_vocab, embd_scale);
  for (int l = 0; l < S::n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    auto type = [&](Tensor t) { return matrix_type(o.weights, t, l, S::n_layers); };
    vector(p + "attn_norm.weight", dim, 0.1f, 1.0f);
    if (phi3) {
      // One matrix, Wq's rows then Wk's then Wv's, as Phi-3's converter writes.
      // Scaled down by the attention factor, which the rotation multiplies
      // Q and K by: the scores are then as large as the other families'
      // files (attention as peaked, the forward pass no more chaotic in the
      // activations' rounding), and a missing factor still shows (1.42x).
      matrix(p + "attn_qkv.weight", type(Tensor::Qkv), dim, q_dim + 2 * kv_dim,
             mat_scale / P::attn_factor);
    } else {
      matrix(p + "attn_q.weight", type(Tensor::Q), dim, q_dim, mat_scale);
      matrix(p + "attn_k.weight", type(Tensor::K), dim, kv_dim, mat_scale);
      matrix(p + "attn_v.weight", type(Tensor::V), dim, kv_dim, mat_scale);
    }
    matrix(p + "attn_output.weight", type(Tensor::O), q_dim, dim, mat_scale);
    vector(p + "ffn_norm.weight", dim, 0.1f, 1.0f);
    if (phi3) {
      // Gate rows then up rows in one matrix.
      matrix(p + "ffn_up.weight", type(Tensor::Up), dim, 2 * ffn_dim, mat_scale);
    } else {
      matrix(p + "ffn_gate.weight", type(Tensor::Gate), dim, ffn_dim, mat_scale);
      matrix(p + "ffn_up.weight", type(Tensor::Up), dim, ffn_dim, mat_scale);
    }
    matrix(p + "ffn_down.weight", type(Tensor::Down), ffn_dim, dim, mat_scale);
    if (o.arch == TinyArch::Qwen2) {
      // Qwen2's biases are f32 in its files; K's are large in the real models.
      vector(p + "attn_q.bias", q_dim, 0.5f, 0.0f);
      vector(p + "attn_k.bias", kv_dim, 1.0f, 0.0f);
      vector(p + "attn_v.bias", kv_dim, 0.5f, 0.0f);
    }
    if (gemma3 || o.arch == TinyArch::Qwen3) {
      // Norm weights as a Gemma converter stores them: 1 + w (Qwen3's: w).
      vector(p + "attn_q_norm.weight", head_dim, 0.1f, 1.0f);
      vector(p + "attn_k_norm.weight", head_dim, 0.1f, 1.0f);
    }
    if (gemma) {
      vector(p + "post_attention_norm.weight", dim, 0.1f, 1.0f);
      vector(p + "post_ffw_norm.weight", dim, 0.1f, 1.0f);
    }
  }
  vector("output_norm.weight", dim, 0.1f, 1.0f);
  if (phi3) {
    // LongRoPE divisors per rotated pair: short in [1, 2.5), long in [1, 40).
    std::vector<float> short_f(head_dim / 2), long_f(head_dim / 2);
    for (auto& f : short_f) f = 1.0f + 1.5f * std::fabs(std::tanh(rng.next()));
    for (auto& f : long_f) f = 1.0f + 39.0f * std::fabs(std::tanh(rng.next()));
    w.add_tensor_f32("rope_factors_long.weight", GgmlType::F32, {head_dim / 2}, long_f);
    w.add_tensor_f32("rope_factors_short.weight", GgmlType::F32, {head_dim / 2}, short_f);
  }
  if (!o.tied_output) matrix("output.weight", embedding_type(o.weights, true), dim, n_vocab, 0.3f);
  return w;
}

}  // namespace

std::optional<TinyArch> tiny_arch(std::string_view name) {
  for (size_t i = 0; i < std::size(kArchNames); ++i)
    if (kArchNames[i] == name) return static_cast<TinyArch>(i);
  return std::nullopt;
}

std::string_view tiny_arch_name(TinyArch arch) { return kArchNames[static_cast<int>(arch)]; }

std::optional<TinyWeights> tiny_weights(std::string_view name) {
  for (size_t i = 0; i < std::size(kWeightsNames); ++i)
    if (kWeightsNames[i] == name) return static_cast<TinyWeights>(i);
  return std::nullopt;
}

std::string_view tiny_weights_name(TinyWeights w) { return kWeightsNames[static_cast<int>(w)]; }

std::vector<uint8_t> make_tiny_model(const TinyModelOptions& options) {
  return build_tiny_model(options).to_bytes();
}

void write_tiny_model(const std::string& path, const TinyModelOptions& options) {
  build_tiny_model(options).write(path);
}

}  // namespace kvbench
