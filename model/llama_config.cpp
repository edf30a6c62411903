#include "model/llama_config.h"

#include <iterator>
#include <string>

#include "model/common/error.h"
#include "model/common/printable.h"
#include "model/gemma3_config.h"
#include "model/gguf/gguf.h"
#include "model/phi3_config.h"
#include "model/qwen_config.h"

namespace kvbench {
namespace {

[[noreturn]] void fail(const GgufFile& f, const std::string& what) {
  throw InputError(f.path() + ": " + what);
}

// A required positive count, bounded so that products of sizes cannot overflow.
int read_count(const GgufFile& f, const std::string& key, uint32_t max) {
  if (!f.has(key)) fail(f, "missing key '" + key + "'");
  const uint32_t v = f.get_u32(key);
  if (v == 0 || v > max)
    fail(f, "key '" + key + "' = " + std::to_string(v) + " is out of range [1, " +
                std::to_string(max) + "]");
  return static_cast<int>(v);
}

// The architectures kvbench runs. Each reads what its files add to the shared
// keys into the block's fields of LlamaConfig; LLaMA's block is the defaults.
struct Architecture {
  std::string_view name;
  void (*read)(const GgufFile& file, LlamaConfig& c);  // null: nothing to add
};
constexpr Architecture kArchitectures[] = {
    {"llama", read_llama_extras}, {"gemma3", read_gemma3_config}, {"qwen2", read_qwen2_config},
    {"qwen3", read_qwen3_config}, {"phi3", read_phi3_config},     {"gemma2", read_gemma2_config}};

const Architecture* find_architecture(std::string_view name) {
  for (const Architecture& a : kArchitectures)
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace

bool runs_architecture(std::string_view arch) { return find_architecture(arch) != nullptr; }

std::string architecture_names() {
  std::string out;
  const size_t n = std::size(kArchitectures);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += i + 1 == n ? " and " : ", ";
    out += "'" + std::string(kArchitectures[i].name) + "'";
  }
  return out;
}

LlamaConfig read_llama_config(const GgufFile& f) {
  if (!f.has("general.architecture")) fail(f, "missing key 'general.architecture'");
  const std::string arch = f.get_string("general.architecture");
  const Architecture* architecture = find_architecture(arch);
  if (!architecture)
    fail(f, "unsupported architecture '" + escaped_text(arch, 64) + "' (kvbench runs " +
                architecture_names() + ")");
  LlamaConfig c;
  c.arch_name = arch;
  // Keys under the architecture's name: llama.block_count, gemma3.block_count.
  // Only these families' keys are read; a key they do not know is ignored,
  // as llama.cpp ignores it.
  const std::string p = arch + ".";
  c.name = f.get_string_or("general.name", "");
  c.n_layers = read_count(f, p + "block_count", 1024);
  c.dim = read_count(f, p + "embedding_length", 1 << 16);
  c.ffn_dim = read_count(f, p + "feed_forward_length", 1 << 18);
  c.n_heads = read_count(f, p + "attention.head_count", 1024);
  c.n_kv_heads = f.has(p + "attention.head_count_kv")
                     ? read_count(f, p + "attention.head_count_kv", 1024)
                     : c.n_heads;
  if (c.n_heads % c.n_kv_heads != 0)
    fail(f, p + "attention.head_count (" + std::to_string(c.n_heads) + ") is not a multiple of " +
                p + "attention.head_count_kv (" + std::to_string(c.n_kv_heads) + ")");
  // Mixture-of-experts files (Mixtral is a llama file with experts; the
  // qwen2/qwen3 MoE models have their own architectures) route each token
  // to expert FFNs, which the block does not run: say so, rather than name
  // the dense FFN tensor the file lacks.
  if (const uint32_t experts = f.get_u32_or(p + "expert_count", 0); experts > 0)
    fail(f, p + "expert_count is " + std::to_string(experts) +
                ": mixture-of-experts models are not supported");
  if (f.has(p + "attention.key_length")) {
    c.head_dim = read_count(f, p + "attention.key_length", 1024);
    const int v_len = f.has(p + "attention.value_length")
                          ? read_count(f, p + "attention.value_length", 1024)
                          : c.head_dim;
    if (v_len != c.head_dim)
      fail(f, p + "attention.value_length (" + std::to_string(v_len) + ") differs from " + p +
                  "attention.key_length (" + std::to_string(c.head_dim) + "): not supported");
  } else {
    if (c.dim % c.n_heads != 0)
      fail(f, p + "embedding_length is not a multiple of " + p + "attention.head_count");
    c.head_dim = c.dim / c.n_heads;
  }
  if (c.head_dim % 2 != 0)
    fail(f, "head dimension " + std::to_string(c.head_dim) + " (" +
                (f.has(p + "attention.key_length")
                     ? p + "attention.key_length"
                     : p + "embedding_length / " + p + "attention.head_count") +
                ") is odd");
  c.n_ctx_train = read_count(f, p + "context_length", 1u << 24);
  c.rms_eps = f.get_f32_or(p + "attention.layer_norm_rms_epsilon", 1e-5f);
  if (!(c.rms_eps > 0.0f && c.rms_eps < 1.0f))
    fail(f, p + "attention.layer_norm_rms_epsilon is out of range (0, 1)");

  c.rope.n_dims = f.has(p + "rope.dimension_count")
                      ? read_count(f, p + "rope.dimension_count", 1024)
                      : c.head_dim;
  if (c.rope.n_dims > c.head_dim || c.rope.n_dims % 2 != 0)
    fail(f, p + "rope.dimension_count must be even and <= the head dimension");
  c.rope.freq_base = f.get_f32_or(p + "rope.freq_base", 10000.0f);
  if (!(c.rope.freq_base > 1.0f)) fail(f, p + "rope.freq_base must be > 1");
  const std::string scaling = f.get_string_or(p + "rope.scaling.type", "none");
  if (scaling == "linear") {
    const float factor = f.get_f32_or(p + "rope.scaling.factor", 1.0f);
    if (!(factor > 0.0f)) fail(f, p + "rope.scaling.factor must be > 0");
    c.rope.freq_scale = 1.0f / factor;
  } else if (scaling != "none" && scaling != "") {
    fail(f, "unsupported " + p + "rope.scaling.type '" + escaped_text(scaling, 64) +
                "' (supported: none, linear)");
  }
  // llama3-style scaling arrives as the tensor rope_freqs.weight; the weights
  // loader reads it into rope.freq_factors.
  c.local.assign(c.n_layers, false);

  if (architecture->read) architecture->read(f, c);
  return c;
}

}  // namespace kvbench
