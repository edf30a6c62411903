#include "model/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <cassert>

namespace kvbench {
namespace {

constexpr int64_t kTileRows = 64;        // rows dequantized per sgemm tile
constexpr int64_t kGemmMinTokens = 8;    // below this, row-wise dot products win

}  // namespace

float* MatmulScratch::get(int thread, size_t floats) {
  if (buffers_.size() <= static_cast<size_t>(thread)) buffers_.resize(thread + 1);
  auto& b = buffers_[thread];
  if (b.size() < floats) b.resize(floats);
  return b.data();
}

float dot_f32(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  for (int j = 0; i < n; ++i, ++j) acc[j] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int64_t ldy,
            ThreadPool& pool, MatmulScratch& scratch) {
  assert(ldy >= w.rows);
  const int64_t cols = w.cols;
  if (n_tokens < kGemmMinTokens) {
    // Scratch is sized before the parallel region: vectors must not grow
    // concurrently.
    for (int t = 0; t < pool.size(); ++t) scratch.get(t, cols);
    pool.parallel_for(w.rows, [&](int64_t r0, int64_t r1, int thread) {
      float* row = scratch.get(thread, cols);
      for (int64_t r = r0; r < r1; ++r) {
        dequantize_row(w.type, w.row(r), row, cols);
        for (int64_t t = 0; t < n_tokens; ++t) y[t * ldy + r] = dot_f32(row, x + t * cols, cols);
      }
    });
    return;
  }
  const int64_t n_tiles = (w.rows + kTileRows - 1) / kTileRows;
  for (int t = 0; t < pool.size(); ++t) scratch.get(t, kTileRows * cols);
  pool.parallel_for(n_tiles, [&](int64_t t0, int64_t t1, int thread) {
    float* tile = scratch.get(thread, kTileRows * cols);  // [kTileRows][cols]
    for (int64_t tile_index = t0; tile_index < t1; ++tile_index) {
      const int64_t r0 = tile_index * kTileRows;
      const int64_t nr = std::min(kTileRows, w.rows - r0);
      for (int64_t r = 0; r < nr; ++r) dequantize_row(w.type, w.row(r0 + r), tile + r * cols, cols);
      // y[:, r0:r0+nr] = x[n_tokens][cols] * tile[nr][cols]^T
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n_tokens),
                  static_cast<int>(nr), static_cast<int>(cols), 1.0f, x, static_cast<int>(cols),
                  tile, static_cast<int>(cols), 0.0f, y + r0, static_cast<int>(ldy));
    }
  });
}

}  // namespace kvbench
