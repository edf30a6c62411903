// Products of quantized weight matrices with f32 activations:
//   y[t][r] = sum_c W[r][c] * x[t][c]   for t < n_tokens, r < W.rows
//
// Two modes:
//  - Exact: activations stay f32. Few tokens (decode): each thread takes a
//    contiguous block of rows and decodes them in registers while it
//    multiplies them with every token (model/ops/exact_dot.h). Many tokens
//    (prefill): each thread dequantizes tiles of rows (SIMD, bit-identical to
//    dequantize_row), packs them into panels and multiplies them with all
//    tokens, one FMA chain per output (model/ops/exact_gemm.h). Within ~1e-3
//    of a double-precision reference: the tests' yardstick.
//  - Quantized (the fast default): each activation row is quantized once to
//    8-bit blocks and multiplied straight with the quantized weights
//    (model/ops/quant_dot.h), as llama.cpp does. Rows are split over the threads;
//    for many tokens each thread keeps a few weight rows in registers while it
//    meets several activation rows (a quantized GEMM). Weight types without a
//    quantized kernel (F64, Q8_1, Q8_K) fall back to Exact. A matrix with a
//    planar copy (WeightMatrix::planar) is read from that copy where the path
//    has a planar kernel: the same bits, faster loads.
// Both are deterministic: every output element is computed by the same
// operations in the same order whatever the thread count. Quantized mode's
// output rows are also independent of the other rows (a row multiplied in
// a batch has the bits it has alone); Exact mode's are with
// MatmulOptions::row_wise.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/ops/quant_dot.h"
#include "model/ops/thread_pool.h"
#include "model/ops/weight_matrix.h"

namespace kvbench {

enum class MatmulMode { Exact, Quantized };

struct MatmulOptions {
  MatmulMode mode = MatmulMode::Exact;
  CpuPath path = CpuPath::Scalar;  // instruction set of the Quantized kernels
  // Every output row computed as if its activation row were multiplied
  // alone (batched decoding of several sequences: each gets the bits of its
  // own decode). The Quantized kernels always are; Exact mode (and the
  // weight types that fall back to it) then keeps its row-wise kernel
  // instead of the GEMM it uses for 8 tokens or more.
  bool row_wise = false;
};

// Per-thread scratch for matmul; sized on first use, reused afterwards.
class MatmulScratch {
 public:
  float* get(int thread, size_t floats);
  // The quantized activations of one step, per activation type.
  uint8_t* activations(GgmlType type, size_t bytes);

 private:
  std::vector<std::vector<float>> buffers_;
  std::vector<uint8_t> act_q8_0_, act_q8_1_, act_q8_k_;
};

// x: [n_tokens][W.cols], y: [n_tokens][ldy] with ldy >= W.rows (written at columns [0, W.rows)).
void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int64_t ldy,
            ThreadPool& pool, MatmulScratch& scratch, const MatmulOptions& options = {});

// One output of matmul_group: y = W x, y: [n_tokens][ldy].
struct MatmulOutput {
  const WeightMatrix* w = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
};

// Several matrices applied to the same x (e.g. Wq, Wk, Wv): in Quantized mode
// x is quantized once per activation type and all rows of all matrices are
// split over the threads in one parallel region. Every W.cols must be equal.
void matmul_group(std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens,
                  ThreadPool& pool, MatmulScratch& scratch, const MatmulOptions& options);

}  // namespace kvbench
