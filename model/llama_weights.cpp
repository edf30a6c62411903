#include "model/llama_weights.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "model/common/error.h"
#include "model/gemma3_weights.h"
#include "model/gguf/gguf.h"
#include "model/ops/exact_dot.h"
#include "model/ops/interleave.h"
#include "model/ops/planar.h"
#include "model/ops/quant_dot.h"

namespace kvbench {
namespace {

std::string shape_str(const GgufTensor& t) {
  std::string s = "[";
  for (int i = 0; i < t.n_dims; ++i) s += (i ? ", " : "") + std::to_string(t.ne[i]);
  return s + "]";
}

const GgufTensor& require(const GgufFile& f, const std::string& name) {
  const GgufTensor* t = f.find_tensor(name);
  if (!t) throw InputError(f.path() + ": missing tensor '" + name + "'");
  const auto tr = type_traits(static_cast<uint32_t>(t->type));
  if (!tr || !tr->dequantizable)
    throw InputError(f.path() + ": tensor '" + name + "' has type " +
                     std::string(type_name(t->type)) + ", which kvbench cannot read");
  return *t;
}

// Checks that the tensor is a matrix with ne = {cols, rows}.
WeightMatrix matrix(const GgufFile& f, const std::string& name, int64_t rows, int64_t cols) {
  const GgufTensor& t = require(f, name);
  if (t.n_dims > 2 || t.ne[0] != cols || t.ne[1] != rows)
    throw InputError(f.path() + ": tensor '" + name + "' has shape " + shape_str(t) +
                     ", expected [" + std::to_string(cols) + ", " + std::to_string(rows) + "]");
  WeightMatrix m;
  m.type = t.type;
  m.rows = rows;
  m.cols = cols;
  m.row_bytes = row_bytes(t.type, cols);
  m.data = t.data;
  return m;
}

}  // namespace

std::vector<float> load_vector_f32(const GgufFile& f, const std::string& name, int64_t n) {
  const GgufTensor& t = require(f, name);
  if (t.n_dims != 1 || t.ne[0] != n)
    throw InputError(f.path() + ": tensor '" + name + "' has shape " + shape_str(t) +
                     ", expected [" + std::to_string(n) + "]");
  std::vector<float> out(n);
  dequantize_row(t.type, t.data, out.data(), n);
  return out;
}

LlamaWeights load_llama_weights(const GgufFile& f, LlamaConfig& c) {
  LlamaWeights w;
  const GgufTensor* embd = f.find_tensor("token_embd.weight");
  if (!embd) throw InputError(f.path() + ": missing tensor 'token_embd.weight'");
  if (embd->ne[1] <= 0 || embd->ne[1] > (1 << 22))
    throw InputError(f.path() + ": tensor 'token_embd.weight' has an implausible vocabulary size");
  c.n_vocab = static_cast<int>(embd->ne[1]);
  w.tok_embd = matrix(f, "token_embd.weight", c.n_vocab, c.dim);

  w.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[l];
    L.attn_norm = load_vector_f32(f, p + "attn_norm.weight", c.dim);
    L.wq = matrix(f, p + "attn_q.weight", c.q_dim(), c.dim);
    L.wk = matrix(f, p + "attn_k.weight", c.kv_dim(), c.dim);
    L.wv = matrix(f, p + "attn_v.weight", c.kv_dim(), c.dim);
    L.wo = matrix(f, p + "attn_output.weight", c.dim, c.q_dim());
    L.ffn_norm = load_vector_f32(f, p + "ffn_norm.weight", c.dim);
    L.w_gate = matrix(f, p + "ffn_gate.weight", c.ffn_dim, c.dim);
    L.w_up = matrix(f, p + "ffn_up.weight", c.ffn_dim, c.dim);
    L.w_down = matrix(f, p + "ffn_down.weight", c.dim, c.ffn_dim);
    if (c.arch == Arch::Gemma3) load_gemma3_norms(f, c, p, L);
  }
  w.output_norm = load_vector_f32(f, "output_norm.weight", c.dim);
  if (f.find_tensor("output.weight")) {
    w.output = matrix(f, "output.weight", c.n_vocab, c.dim);
  } else {
    w.output = w.tok_embd;  // tied embeddings (SmolLM2)
    w.tied_output = true;
  }
  if (f.find_tensor("rope_freqs.weight"))
    c.rope.freq_factors = load_vector_f32(f, "rope_freqs.weight", c.rope.n_dims / 2);
  return w;
}

size_t add_planar_copies(LlamaWeights& w, CpuPath path) {
  if (const char* env = std::getenv("KVBENCH_PLANAR"); env && std::strcmp(env, "0") == 0) return 0;
  std::vector<WeightMatrix*> planar, interleaved;
  auto want = [&](WeightMatrix& m) {
    if (m.rows <= 0) return;
    if (has_planar_layout(m.type) && has_exact_planar_kernel(m.type, path)) planar.push_back(&m);
    if (has_interleaved_layout(m.type) && has_interleaved_kernel(m.type, path) &&
        m.rows % kInterleaveRows == 0)
      interleaved.push_back(&m);
  };
  want(w.tok_embd);
  for (LayerWeights& L : w.layers) {
    for (WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) want(*m);
  }
  if (!w.tied_output) want(w.output);
  if (planar.empty() && interleaved.empty()) return 0;
  // One allocation, each copy at a 64-byte boundary.
  constexpr size_t kAlign = 64;
  auto bytes = [](const WeightMatrix* m) {
    return (m->row_bytes * m->rows + kAlign - 1) / kAlign * kAlign;
  };
  size_t total = 0;
  for (const WeightMatrix* m : planar) total += bytes(m);
  for (const WeightMatrix* m : interleaved) total += bytes(m);
  w.planar_storage = std::shared_ptr<uint8_t[]>(
      static_cast<uint8_t*>(std::aligned_alloc(kAlign, total)), std::free);
  if (!w.planar_storage) throw std::bad_alloc();
  uint8_t* p = w.planar_storage.get();
  for (WeightMatrix* m : planar) {
    for (int64_t r = 0; r < m->rows; ++r)
      to_planar_row(m->type, m->row(r), p + r * m->row_bytes, m->cols);
    m->planar = p;
    p += bytes(m);
  }
  for (WeightMatrix* m : interleaved) {
    const size_t group = kInterleaveRows * m->row_bytes;
    for (int64_t g = 0; g < m->rows / kInterleaveRows; ++g)
      to_interleaved(m->type, m->row(g * kInterleaveRows), m->row_bytes, p + g * group, m->cols);
    m->interleaved = p;
    p += bytes(m);
  }
  if (w.tied_output) w.output = w.tok_embd;
  return total;
}

}  // namespace kvbench
