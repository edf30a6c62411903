// Products of quantized weight matrices with f32 activations:
//   y[t][r] = sum_c W[r][c] * x[t][c]   for t < n_tokens, r < W.rows
// Few tokens (decode): each thread takes a contiguous block of rows,
// dequantizes one row at a time and dots it with every token.
// Many tokens (prefill): each thread dequantizes tiles of rows and multiplies
// them with all tokens through single-threaded OpenBLAS sgemm.
#pragma once

#include <cstdint>
#include <vector>

#include "model/llama_weights.h"
#include "model/thread_pool.h"

namespace kvbench {

// Per-thread scratch for matmul; sized on first use, reused afterwards.
class MatmulScratch {
 public:
  float* get(int thread, size_t floats);

 private:
  std::vector<std::vector<float>> buffers_;
};

// x: [n_tokens][W.cols], y: [n_tokens][ldy] with ldy >= W.rows (written at columns [0, W.rows)).
void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int64_t ldy,
            ThreadPool& pool, MatmulScratch& scratch);

// Dot product with a fixed summation order (8 interleaved partial sums), so
// results do not depend on the compiler's vectorisation choices.
float dot_f32(const float* a, const float* b, int64_t n);

}  // namespace kvbench
