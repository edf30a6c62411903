// Runs the forward pass over a step of tokens (a prefill chunk or one decode
// token), writing K/V through the cache interface. Holds the thread pool and
// every activation buffer, so steps allocate nothing once buffers have
// reached the largest step size seen. Every architecture runs the same step:
// the embedding lookup, one transformer block per layer
// (model/transformer_block.cpp), the output layer, each shaped by the
// config's fields (llama_config.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/llama_model.h"
#include "model/ops/attention.h"
#include "model/ops/kv_cache.h"
#include "model/ops/matmul.h"
#include "model/ops/rope.h"
#include "model/ops/thread_pool.h"

namespace kvbench {

enum class Logits { None, Last, All };

// One sequence's token in a batched decode step (Evaluator::step_batch): the
// token, its rotary position, and the sequence's own cache (with its id).
struct BatchToken {
  int32_t token = 0;
  int32_t position = 0;
  int seq = 0;
  KvCache* cache = nullptr;
};

class Evaluator {
 public:
  // mode: Quantized (8-bit activations, as llama.cpp; the fast default) or
  // Exact (f32 activations; what the correctness tests compare). The Quantized
  // kernels use default_cpu_path() (KVBENCH_CPU may force one; a bad value
  // throws InputError).
  Evaluator(const LlamaModel& model, int n_threads, MatmulMode mode = MatmulMode::Quantized);

  // tokens, positions: [n]. Writes logits: [n_vocab] for Logits::Last,
  // [n][n_vocab] for Logits::All (caller-sized), nothing for Logits::None.
  void step(std::span<const int32_t> tokens, std::span<const int32_t> positions, int seq,
            StepPhase phase, KvCache& cache, Logits which, float* logits);

  // One decode step of several sequences at once, each with its own cache
  // (distinct caches): the weight matmuls run once over the n rows, each
  // row then appends to and attends over its own cache, which begins, is
  // observed and ends its step as if it were decoded alone. Writes every
  // row's logits, [n][n_vocab]. Each row's logits have the bits step() gives
  // that sequence alone, because no product mixes rows: the matmuls' rows
  // are independent (tests/test_matmul.cpp) and attention is per row.
  void step_batch(std::span<const BatchToken> rows, float* logits);

  const LlamaModel& model() const { return model_; }
  int n_threads() const { return pool_.size(); }
  ThreadPool& pool() { return pool_; }
  const MatmulOptions& matmul_options() const { return matmul_options_; }
  // The matmul kernels' instruction-set path (tests compare paths); it must
  // be supported (cpu_path_supported).
  void set_matmul_path(CpuPath path) { matmul_options_.path = path; }
  // Prefill attention with bfloat16 products (AttentionShape::bf16: about
  // twice the f32 rate where the CPU has AVX-512 BF16) instead of f32 ones.
  // Off by default: the f32 arithmetic is llama.cpp's, which the golden
  // tests compare. Decode attention stays f32 either way.
  void set_bf16_attention(bool on) { bf16_attention_ = on; }
  bool bf16_attention() const { return bf16_attention_; }
  // Decode attention scores of quantized keys (int8 / int4 / int2 caches)
  // against an int8 query (AttentionShape::q8_query: integer dot products,
  // llama.cpp's way with a quantized K cache) instead of f32 products on
  // the dequantized keys. Off by default, for the same reason as bf16.
  void set_q8_query(bool on) { q8_query_ = on; }
  bool q8_query() const { return q8_query_; }

 private:
  void ensure_capacity(int64_t n_tokens);
  // x_ = the tokens' embeddings, and this step's RoPE tables at `positions`.
  void embed(std::span<const int32_t> tokens, std::span<const int32_t> positions);
  // One transformer block over the step's n tokens: x_ += attention, x_ += FFN.
  // caches: one cache for all n tokens, or n (row t's own cache).
  void block(int layer, std::span<const int32_t> positions, std::span<KvCache* const> caches);
  // logits = output layer of x_ rows [first, first + rows).
  void output(int64_t first, int64_t rows, float* logits);
  // What a sub-block's first matmuls read, [n_tokens][dim]: x_ RMS-normed
  // into xn_ when `norm`, else x_ itself.
  const float* block_input(bool norm, const std::vector<float>& weight, int64_t n_tokens);
  void rms_norm(const float* x, const std::vector<float>& weight, float* out, int64_t n_tokens);
  // RMS norm of n_rows rows of `width` floats (out may be x): the per-head
  // query / key norms use width = head_dim.
  void rms_norm_rows(const float* x, const std::vector<float>& weight, float* out, int64_t n_rows,
                     int width);
  // fn(t0, t1) over tokens [0, n): split over the threads when there are
  // enough tokens to pay for a parallel region. Each token's arithmetic is
  // the same either way.
  template <class Fn>
  void for_tokens(int64_t n, Fn&& fn);
  void add_residual(int64_t n);
  // rows[t][i] += bias[i] for the first n rows of bias.size() floats.
  void add_bias_rows(float* rows, const std::vector<float>& bias, int64_t n);

  const LlamaModel& model_;
  ThreadPool pool_;
  MatmulOptions matmul_options_;
  bool bf16_attention_ = false;
  bool q8_query_ = false;
  MatmulScratch matmul_scratch_;
  AttentionScratch attention_scratch_;
  std::vector<float> inv_freq_;        // [rope.n_dims / 2]
  std::vector<float> inv_freq_local_;  // rope_local's, when there are local layers
  // This step's RoPE cosines and sines, built once in step() for every layer:
  // rope_ from inv_freq_, rope_local_ from inv_freq_local_ (local layers).
  RopeTable rope_;
  RopeTable rope_local_;
  int64_t capacity_ = 0;
  // Activations, [capacity][width]:
  std::vector<float> x_;     // residual stream [dim]
  std::vector<float> xn_;    // normalised [dim]
  std::vector<float> q_;     // [n_heads * head_dim]
  std::vector<float> k_;     // [n_kv_heads * head_dim]
  std::vector<float> v_;     // [n_kv_heads * head_dim]
  std::vector<float> attn_;  // [n_heads * head_dim]
  std::vector<float> gate_;  // [ffn_dim]
  std::vector<float> up_;    // [ffn_dim]
  std::vector<float> proj_;  // [dim] output of wo / w_down before the residual add
};

// Below this many tokens the element-wise work between matmuls stays on the
// calling thread: a parallel region costs a few microseconds. (Defined here
// so that the block, in its own file, uses it.)
template <class Fn>
void Evaluator::for_tokens(int64_t n, Fn&& fn) {
  constexpr int64_t kParallelTokens = 8;
  if (n < kParallelTokens || pool_.size() == 1) return fn(int64_t{0}, n);
  pool_.parallel_for(n, [&](int64_t t0, int64_t t1, int) { fn(t0, t1); });
}

}  // namespace kvbench
