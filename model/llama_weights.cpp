#include "model/llama_weights.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "model/common/error.h"
#include "model/gguf/gguf.h"
#include "model/model_tensors.h"
#include "model/ops/exact_dot.h"
#include "model/ops/interleave.h"
#include "model/ops/planar.h"
#include "model/ops/quant_dot.h"

namespace kvbench {

LlamaWeights load_llama_weights(const GgufFile& f, LlamaConfig& c) {
  LlamaWeights w;
  ModelTensors tensors(f, c);
  const GgufTensor* embd = f.find_tensor("token_embd.weight");
  if (!embd) throw InputError(f.path() + ": missing tensor 'token_embd.weight'");
  if (embd->ne[1] <= 0 || embd->ne[1] > (1 << 22))
    throw InputError(f.path() + ": tensor 'token_embd.weight' has an implausible vocabulary size");
  c.n_vocab = static_cast<int>(embd->ne[1]);
  // The vocabulary is token_embd's rows; a file that states it must agree.
  const std::string vocab_key = c.arch_name + ".vocab_size";
  if (f.has(vocab_key) && f.get_u32(vocab_key) != static_cast<uint32_t>(c.n_vocab))
    throw InputError(f.path() + ": key '" + vocab_key +
                     "' = " + std::to_string(f.get_u32(vocab_key)) +
                     ", but tensor 'token_embd.weight' has " + std::to_string(c.n_vocab) + " rows");
  w.tok_embd = tensors.matrix("token_embd.weight", c.n_vocab, c.dim);

  w.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[l];
    // The norms c.norms names, each required; a file that has one it does
    // not name is refused (check_nothing_left).
    const BlockNorms& norms = c.norms;
    if (norms.pre_attention) L.attn_norm = tensors.vector_f32(p + "attn_norm.weight", c.dim);
    if (c.fused_qkv_allowed && tensors.has(p + "attn_qkv.weight")) {
      // Phi-3: [q_dim + 2 kv_dim][dim], Wq's rows, then Wk's, then Wv's.
      const WeightMatrix qkv =
          tensors.matrix(p + "attn_qkv.weight", c.q_dim() + 2 * int64_t{c.kv_dim()}, c.dim);
      L.wq = row_slice(qkv, 0, c.q_dim());
      L.wk = row_slice(qkv, c.q_dim(), c.kv_dim());
      L.wv = row_slice(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
    } else {
      L.wq = tensors.matrix(p + "attn_q.weight", c.q_dim(), c.dim);
      L.wk = tensors.matrix(p + "attn_k.weight", c.kv_dim(), c.dim);
      L.wv = tensors.matrix(p + "attn_v.weight", c.kv_dim(), c.dim);
    }
    L.wo = tensors.matrix(p + "attn_output.weight", c.dim, c.q_dim());
    const int biases = tensors.has(p + "attn_q.bias") + tensors.has(p + "attn_k.bias") +
                       tensors.has(p + "attn_v.bias");
    if (biases != 0 && biases != 3)
      throw InputError(f.path() + ": layer " + std::to_string(l) +
                       " has some of attn_q.bias, attn_k.bias and attn_v.bias but not all three");
    if (biases == 3) {
      L.bq = tensors.vector_f32(p + "attn_q.bias", c.q_dim());
      L.bk = tensors.vector_f32(p + "attn_k.bias", c.kv_dim());
      L.bv = tensors.vector_f32(p + "attn_v.bias", c.kv_dim());
    }
    if (norms.pre_ffn) L.ffn_norm = tensors.vector_f32(p + "ffn_norm.weight", c.dim);
    if (c.fused_gate_up) {
      // Phi-3: [2 ffn_dim][dim], the gate's rows first (ggml_swiglu gates
      // with the first half, as HF's Phi3MLP chunks gate_up_proj).
      const WeightMatrix gate_up =
          tensors.matrix(p + "ffn_up.weight", 2 * int64_t{c.ffn_dim}, c.dim);
      L.w_gate = row_slice(gate_up, 0, c.ffn_dim);
      L.w_up = row_slice(gate_up, c.ffn_dim, c.ffn_dim);
    } else {
      L.w_gate = tensors.matrix(p + "ffn_gate.weight", c.ffn_dim, c.dim);
      L.w_up = tensors.matrix(p + "ffn_up.weight", c.ffn_dim, c.dim);
    }
    L.w_down = tensors.matrix(p + "ffn_down.weight", c.dim, c.ffn_dim);
    if (norms.qk) {
      L.q_norm = tensors.vector_f32(p + "attn_q_norm.weight", c.head_dim);
      L.k_norm = tensors.vector_f32(p + "attn_k_norm.weight", c.head_dim);
    }
    if (norms.post_attention)
      L.attn_post_norm = tensors.vector_f32(p + "post_attention_norm.weight", c.dim);
    if (norms.post_ffn) L.ffn_post_norm = tensors.vector_f32(p + "post_ffw_norm.weight", c.dim);
  }
  w.output_norm = tensors.vector_f32("output_norm.weight", c.dim);
  // llama.cpp's gemma2 loader always ties the output to token_embd (a file
  // with output.weight is refused there, and here as an unknown tensor).
  if (c.arch_name != "gemma2" && tensors.has("output.weight")) {
    w.output = tensors.matrix("output.weight", c.n_vocab, c.dim);
  } else {
    w.output = w.tok_embd;  // tied embeddings (SmolLM2)
    w.tied_output = true;
  }
  if (tensors.has("rope_freqs.weight"))
    c.rope.freq_factors = tensors.vector_f32("rope_freqs.weight", c.rope.n_dims / 2);
  if (c.arch_name == "phi3") {
    // LongRoPE: llama.cpp takes the short factors while its context is at
    // most the original one (llama_model::get_rope_factors), the long ones
    // beyond; LlamaModel::load swaps them in for such a context.
    if (tensors.has("rope_factors_short.weight"))
      c.rope.freq_factors = tensors.vector_f32("rope_factors_short.weight", c.rope.n_dims / 2);
    if (tensors.has("rope_factors_long.weight"))
      c.rope_long_factors = tensors.vector_f32("rope_factors_long.weight", c.rope.n_dims / 2);
  }
  // A zero, negative or huge divisor would make the angles meaningless.
  for (const auto* set : {&c.rope.freq_factors, &c.rope_long_factors})
    for (float factor : *set)
      if (!(factor > 0.0f && factor < 1e6f))
        throw InputError(f.path() + ": a RoPE frequency factor is not in (0, 1e6)");
  tensors.check_nothing_left();
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
