#include "model/testing/shaped_model.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <stdexcept>

#include "model/common/error.h"
#include "model/gguf/gguf_writer.h"
#include "model/testing/tiny_vocab.h"

namespace kvbench {
namespace {

// From meta-llama/Llama-3.2-1B and meta-llama/Meta-Llama-3-8B config.json.
std::vector<ModelShape> make_shapes() {
  ModelShape l32_1b;
  l32_1b.name = "llama3.2-1b";
  l32_1b.n_layers = 16;
  l32_1b.dim = 2048;
  l32_1b.n_heads = 32;
  l32_1b.n_kv_heads = 8;  // head_dim 64
  l32_1b.ffn_dim = 8192;
  l32_1b.n_vocab = 128256;
  l32_1b.n_ctx = 131072;
  l32_1b.rope_freq_base = 500000.0f;
  l32_1b.rms_eps = 1e-5f;
  l32_1b.tied_output = true;
  l32_1b.rope_scale_factor = 32.0f;
  l32_1b.rope_low_freq_factor = 1.0f;
  l32_1b.rope_high_freq_factor = 4.0f;
  l32_1b.rope_original_ctx = 8192;

  ModelShape l3_8b;
  l3_8b.name = "llama3-8b";
  l3_8b.n_layers = 32;
  l3_8b.dim = 4096;
  l3_8b.n_heads = 32;
  l3_8b.n_kv_heads = 8;  // head_dim 128
  l3_8b.ffn_dim = 14336;
  l3_8b.n_vocab = 128256;
  l3_8b.n_ctx = 8192;
  l3_8b.rope_freq_base = 500000.0f;
  l3_8b.rms_eps = 1e-5f;
  l3_8b.tied_output = false;
  // Qwen/Qwen2.5-7B-Instruct config.json: Q/K/V biases, RoPE halves.
  ModelShape q25_7b;
  q25_7b.name = "qwen2.5-7b";
  q25_7b.arch = "qwen2";
  q25_7b.n_layers = 28;
  q25_7b.dim = 3584;
  q25_7b.n_heads = 28;
  q25_7b.n_kv_heads = 4;  // head_dim 128
  q25_7b.ffn_dim = 18944;
  q25_7b.n_vocab = 152064;
  q25_7b.n_ctx = 32768;
  q25_7b.rope_freq_base = 1000000.0f;
  q25_7b.rms_eps = 1e-6f;

  // Qwen/Qwen3-8B config.json: QK-norms, RoPE halves.
  ModelShape q3_8b;
  q3_8b.name = "qwen3-8b";
  q3_8b.arch = "qwen3";
  q3_8b.n_layers = 36;
  q3_8b.dim = 4096;
  q3_8b.n_heads = 32;
  q3_8b.n_kv_heads = 8;  // head_dim 128
  q3_8b.ffn_dim = 12288;
  q3_8b.n_vocab = 151936;
  q3_8b.n_ctx = 40960;
  q3_8b.rope_freq_base = 1000000.0f;
  q3_8b.rms_eps = 1e-6f;

  // microsoft/Phi-3.5-mini-instruct config.json: fused tensors, LongRoPE
  // (131072 over 4096: attention factor sqrt(1 + ln 32 / ln 4096)), no GQA.
  ModelShape phi35;
  phi35.name = "phi3.5-mini";
  phi35.arch = "phi3";
  phi35.n_layers = 32;
  phi35.dim = 3072;
  phi35.n_heads = 32;
  phi35.n_kv_heads = 32;  // head_dim 96
  phi35.ffn_dim = 8192;
  phi35.n_vocab = 32064;
  phi35.n_ctx = 131072;
  phi35.rope_freq_base = 10000.0f;
  phi35.rms_eps = 1e-5f;
  phi35.rope_original_ctx = 4096;
  phi35.attn_factor = 1.1902381f;
  phi35.sliding_window = 262144;
  return {l32_1b, l3_8b, q25_7b, q3_8b, phi35};
}

// llama.cpp's LLAMA_FTYPE_* for a file whose matrices are all `type`.
uint32_t file_type(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0:
      return 2;  // MOSTLY_Q4_0
    case GgmlType::Q8_0:
      return 7;  // MOSTLY_Q8_0
    case GgmlType::Q4_K:
      return 14;  // MOSTLY_Q4_K_S (every matrix Q4_K)
    default:
      throw std::invalid_argument("shaped model: unsupported type");
  }
}

// rope_freqs.weight as llama.cpp's converter computes it for rope_type llama3:
// a divisor of each inverse frequency, 1 for short wavelengths, the factor for
// long ones, a smooth blend in between.
std::vector<float> llama3_rope_factors(const ModelShape& s) {
  const int hd = s.head_dim();
  const double low_wavelen = s.rope_original_ctx / s.rope_low_freq_factor;
  const double high_wavelen = s.rope_original_ctx / s.rope_high_freq_factor;
  std::vector<float> f(hd / 2);
  for (int i = 0; i < hd / 2; ++i) {
    const double freq = 1.0 / std::pow(static_cast<double>(s.rope_freq_base), 2.0 * i / hd);
    const double wavelen = 2.0 * std::numbers::pi / freq;
    if (wavelen < high_wavelen) {
      f[i] = 1.0f;
    } else if (wavelen > low_wavelen) {
      f[i] = s.rope_scale_factor;
    } else {
      const double smooth = (s.rope_original_ctx / wavelen - s.rope_low_freq_factor) /
                            (s.rope_high_freq_factor - s.rope_low_freq_factor);
      f[i] = static_cast<float>(1.0 / ((1.0 - smooth) / s.rope_scale_factor + smooth));
    }
  }
  return f;
}

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// splitmix64: 8 random bytes per call.
class Bits {
 public:
  explicit Bits(uint64_t stream) : state_(stream) {}
  uint64_t next() { return mix64(state_ += 0x9E3779B97F4A7C15ull); }

 private:
  uint64_t state_;
};

void store_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

void random_bytes(Bits& bits, uint8_t* dst, int n) {
  for (int i = 0; i < n; i += 8) {
    const uint64_t r = bits.next();
    std::memcpy(dst + i, &r, static_cast<size_t>(std::min(8, n - i)));  // little-endian hosts
  }
}

// E[q^2] of the codes each type draws (see random_quant_blocks).
constexpr double kQ4_0CodeMeanSquare = 21.5;  // q - 8, q uniform in 0..15
// q uniform over the 256 int8 values with -128 read as -127:
// (2 * sum_{1..127} k^2 + 127^2) / 256.
constexpr double kQ8_0CodeMeanSquare = (2.0 * 127 * 128 * 255 / 6 + 127.0 * 127) / 256;
constexpr int kQ4KScaleLo = 4, kQ4KScaleCount = 32;  // sub-block scales 4..35
// E[sc^2] (sc uniform in 4..35) times E[(q - 7.5)^2] (q uniform in 0..15).
constexpr double kQ4KMeanSquare = (19.5 * 19.5 + (32.0 * 32 - 1) / 12) * 21.25;

}  // namespace

const std::vector<ModelShape>& model_shapes() {
  static const std::vector<ModelShape> shapes = make_shapes();
  return shapes;
}

const ModelShape* find_model_shape(std::string_view name) {
  for (const ModelShape& s : model_shapes()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::optional<GgmlType> shaped_weight_type(std::string_view name) {
  if (name == "q4_0") return GgmlType::Q4_0;
  if (name == "q8_0") return GgmlType::Q8_0;
  if (name == "q4_k") return GgmlType::Q4_K;
  return std::nullopt;
}

std::vector<std::string_view> shaped_weight_type_names() { return {"q4_0", "q8_0", "q4_k"}; }

void random_quant_blocks(GgmlType type, float rms, uint64_t stream, uint8_t* dst,
                         int64_t n_blocks) {
  Bits bits(stream);
  switch (type) {
    case GgmlType::Q4_0: {  // d (f16), qs[16]
      const uint16_t d = fp32_to_fp16(static_cast<float>(rms / std::sqrt(kQ4_0CodeMeanSquare)));
      for (int64_t b = 0; b < n_blocks; ++b, dst += 18) {
        const uint64_t r = bits.next();
        store_u16(dst, static_cast<uint16_t>(d | ((r & 1) << 15)));
        random_bytes(bits, dst + 2, 16);
      }
      return;
    }
    case GgmlType::Q8_0: {  // d (f16), qs[32] int8
      const uint16_t d = fp32_to_fp16(static_cast<float>(rms / std::sqrt(kQ8_0CodeMeanSquare)));
      for (int64_t b = 0; b < n_blocks; ++b, dst += 34) {
        store_u16(dst, d);
        random_bytes(bits, dst + 2, 32);
        for (int j = 2; j < 34; ++j) {
          if (dst[j] == 0x80) dst[j] = 0x81;  // -128 -> -127: ggml's quantizers never write -128
        }
      }
      return;
    }
    case GgmlType::Q4_K: {  // d, dmin (f16), scales[12] (6-bit sc/m pairs), qs[128]
      const float d = static_cast<float>(rms / std::sqrt(kQ4KMeanSquare));
      const uint16_t d16 = fp32_to_fp16(d);
      const uint16_t dmin16 = fp32_to_fp16(7.5f * fp16_to_fp32(d16));
      for (int64_t b = 0; b < n_blocks; ++b, dst += 144) {
        store_u16(dst, d16);
        store_u16(dst + 2, dmin16);
        const uint64_t r = bits.next();
        int sc[8];
        for (int j = 0; j < 8; ++j)
          sc[j] = kQ4KScaleLo + static_cast<int>((r >> (5 * j)) % kQ4KScaleCount);
        // Packing of get_scale_min_k4 (ggml_types.cpp), with min = scale.
        uint8_t* s = dst + 4;
        for (int j = 0; j < 4; ++j) {
          s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
          s[j + 4] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
          s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((sc[j + 4] & 0x0F) << 4));
        }
        random_bytes(bits, dst + 16, 128);
      }
      return;
    }
    default:
      throw std::invalid_argument("random_quant_blocks: unsupported type");
  }
}

std::vector<PlannedTensor> plan_shaped_model(const ModelShape& s, GgmlType type) {
  std::vector<PlannedTensor> plan;
  const auto add = [&](std::string name, GgmlType t, std::vector<int64_t> ne) {
    if (!row_is_whole(t, ne[0])) {
      throw InputError(s.name + ": " + name + " rows of " + std::to_string(ne[0]) +
                       " elements are not whole " + std::string(type_name(t)) + " blocks");
    }
    PlannedTensor p{std::move(name), t, std::move(ne), 1, 0};
    for (int64_t n : p.ne) p.elements *= n;
    p.bytes = row_bytes(t, p.ne[0]) * static_cast<size_t>(p.elements / p.ne[0]);
    plan.push_back(std::move(p));
  };
  const int64_t dim = s.dim, q_dim = int64_t{s.n_heads} * s.head_dim(),
                kv_dim = int64_t{s.n_kv_heads} * s.head_dim(), ffn = s.ffn_dim;
  // ne = {row length (input), rows (output)}.
  add("token_embd.weight", type, {dim, s.n_vocab});
  if (s.rope_scale_factor > 0.0f) add("rope_freqs.weight", GgmlType::F32, {s.head_dim() / 2});
  for (int l = 0; l < s.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", GgmlType::F32, {dim});
    if (s.fused()) {
      add(p + "attn_qkv.weight", type, {dim, q_dim + 2 * kv_dim});
    } else {
      add(p + "attn_q.weight", type, {dim, q_dim});
      add(p + "attn_k.weight", type, {dim, kv_dim});
      add(p + "attn_v.weight", type, {dim, kv_dim});
    }
    if (s.qkv_bias()) {
      add(p + "attn_q.bias", GgmlType::F32, {q_dim});
      add(p + "attn_k.bias", GgmlType::F32, {kv_dim});
      add(p + "attn_v.bias", GgmlType::F32, {kv_dim});
    }
    if (s.qk_norm()) {
      add(p + "attn_q_norm.weight", GgmlType::F32, {s.head_dim()});
      add(p + "attn_k_norm.weight", GgmlType::F32, {s.head_dim()});
    }
    add(p + "attn_output.weight", type, {q_dim, dim});
    add(p + "ffn_norm.weight", GgmlType::F32, {dim});
    if (s.fused()) {
      add(p + "ffn_up.weight", type, {dim, 2 * ffn});
    } else {
      add(p + "ffn_gate.weight", type, {dim, ffn});
      add(p + "ffn_up.weight", type, {dim, ffn});
    }
    add(p + "ffn_down.weight", type, {ffn, dim});
  }
  add("output_norm.weight", GgmlType::F32, {dim});
  if (!s.tied_output) add("output.weight", type, {dim, s.n_vocab});
  if (s.fused()) {
    add("rope_factors_long.weight", GgmlType::F32, {s.head_dim() / 2});
    add("rope_factors_short.weight", GgmlType::F32, {s.head_dim() / 2});
  }
  return plan;
}

void write_shaped_model(const std::string& path, const ModelShape& s, GgmlType type,
                        uint64_t seed) {
  const std::vector<PlannedTensor> plan = plan_shaped_model(s, type);
  GgufWriter w;
  const std::string a = s.arch + ".";
  w.set_string("general.architecture", s.arch);
  // Not the shape's name for Phi-3: llama.cpp gives a file whose name says
  // phi3 or phi-3 Phi-3's special tokens, which this vocabulary lacks.
  w.set_string("general.name", "kvbench random-weight " +
                                   (s.fused() ? std::string("phi 3.5 mini shape") : s.name) + " " +
                                   std::string(type_name(type)));
  w.set_u32("general.file_type", file_type(type));
  w.set_u32(a + "block_count", s.n_layers);
  w.set_u32(a + "context_length", s.n_ctx);
  w.set_u32(a + "embedding_length", s.dim);
  w.set_u32(a + "feed_forward_length", s.ffn_dim);
  w.set_u32(a + "attention.head_count", s.n_heads);
  w.set_u32(a + "attention.head_count_kv", s.n_kv_heads);
  w.set_f32(a + "rope.freq_base", s.rope_freq_base);
  w.set_u32(a + "rope.dimension_count", s.head_dim());
  w.set_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
  w.set_u32(a + "vocab_size", s.n_vocab);
  if (s.fused()) {
    w.set_u32(a + "rope.scaling.original_context_length", s.rope_original_ctx);
    w.set_f32(a + "rope.scaling.attn_factor", s.attn_factor);
    w.set_u32(a + "attention.sliding_window", s.sliding_window);
  }
  write_padded_spm_vocab(w, s.n_vocab);

  const uint64_t seed_stream = mix64(seed + 0x9E3779B97F4A7C15ull);
  for (size_t t = 0; t < plan.size(); ++t) {
    const PlannedTensor& p = plan[t];
    if (p.type == GgmlType::F32) {
      // Norms are ones (as a freshly initialised model), biases zeros,
      // LongRoPE's factors ones; rope_freqs as computed.
      const bool bias = p.name.ends_with(".bias");
      const std::vector<float> values =
          p.name == "rope_freqs.weight"
              ? llama3_rope_factors(s)
              : std::vector<float>(static_cast<size_t>(p.elements), bias ? 0.0f : 1.0f);
      w.add_tensor_f32(p.name, p.type, p.ne, values);
      continue;
    }
    // Every matrix maps a row-length input to outputs of the input's RMS
    // (x normalised to RMS 1 gives W x of RMS about 1); token_embd and output
    // follow the same rule over dim.
    const float rms = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.ne[0])));
    const size_t row = row_bytes(p.type, p.ne[0]);
    const int64_t blocks_per_row = p.ne[0] / traits(p.type).block_size;
    const uint64_t tensor_stream =
        mix64(seed_stream ^ (static_cast<uint64_t>(t) * 0xD1B54A32D192ED03ull));
    const GgmlType qt = p.type;
    w.add_tensor_rows(p.name, p.type, p.ne, [=](uint8_t* dst, int64_t first_row, int64_t n_rows) {
      for (int64_t r = 0; r < n_rows; ++r) {
        const uint64_t row_index = static_cast<uint64_t>(first_row + r);
        const uint64_t stream = mix64(tensor_stream + row_index * 0x9E3779B97F4A7C15ull);
        random_quant_blocks(qt, rms, stream, dst + static_cast<size_t>(r) * row, blocks_per_row);
      }
    });
  }
  w.write(path);
}

}  // namespace kvbench
