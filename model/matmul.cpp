#include "model/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cassert>

namespace kvbench {
namespace {

constexpr int64_t kTileRows = 64;        // rows dequantized per sgemm tile
constexpr int64_t kGemmMinTokens = 8;    // below this, row-wise dot products win
// Quantizing activations is ~1 ns per element: below this many elements a
// parallel region costs more than it saves.
constexpr int64_t kParallelQuantizeMin = 8192;
constexpr size_t kMaxGroup = 8;          // matrices per matmul_group call

void matmul_exact(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int64_t ldy,
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

// One matrix of a Quantized group: its rows occupy [first, first + w->rows)
// of the group's concatenated rows.
struct Segment {
  const WeightMatrix* w = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
  const uint8_t* act = nullptr;  // [n_tokens][act_stride] activations of the weight's type
  size_t act_stride = 0;
  int64_t first = 0;
};

}  // namespace

float* MatmulScratch::get(int thread, size_t floats) {
  if (buffers_.size() <= static_cast<size_t>(thread)) buffers_.resize(thread + 1);
  auto& b = buffers_[thread];
  if (b.size() < floats) b.resize(floats);
  return b.data();
}

uint8_t* MatmulScratch::activations(GgmlType type, size_t bytes) {
  std::vector<uint8_t>& b = type == GgmlType::Q8_0 ? act_q8_0_ : type == GgmlType::Q8_1 ? act_q8_1_ : act_q8_k_;
  assert(type == GgmlType::Q8_0 || type == GgmlType::Q8_1 || type == GgmlType::Q8_K);
  if (b.size() < bytes) b.resize(bytes);
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
            ThreadPool& pool, MatmulScratch& scratch, const MatmulOptions& options) {
  const MatmulOutput out{&w, y, ldy};
  matmul_group(std::span(&out, 1), x, n_tokens, pool, scratch, options);
}

void matmul_group(std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens,
                  ThreadPool& pool, MatmulScratch& scratch, const MatmulOptions& options) {
  assert(!outputs.empty() && outputs.size() <= kMaxGroup);
  if (n_tokens <= 0) return;
  const int64_t cols = outputs[0].w->cols;
  std::array<Segment, kMaxGroup> segments;
  size_t n_segments = 0;
  int64_t total_rows = 0;
  for (const MatmulOutput& o : outputs) {
    assert(o.w->cols == cols && o.ldy >= o.w->rows);
    const auto act_type = dot_activation_type(o.w->type);
    if (options.mode == MatmulMode::Exact || !act_type) {
      matmul_exact(*o.w, x, n_tokens, o.y, o.ldy, pool, scratch);
      continue;
    }
    Segment& s = segments[n_segments++];
    s.w = o.w;
    s.y = o.y;
    s.ldy = o.ldy;
    s.first = total_rows;
    total_rows += o.w->rows;
    if (*act_type == GgmlType::F32) {  // F32/F16/BF16 weights read x as it is
      s.act = reinterpret_cast<const uint8_t*>(x);
      s.act_stride = static_cast<size_t>(cols) * sizeof(float);
      continue;
    }
    s.act_stride = row_bytes(*act_type, cols);
    // Quantize x once per activation type: reuse an earlier segment's rows.
    for (size_t i = 0; i + 1 < n_segments; ++i) {
      if (dot_activation_type(segments[i].w->type) == act_type) s.act = segments[i].act;
    }
    if (s.act != nullptr) continue;
    uint8_t* q = scratch.activations(*act_type, s.act_stride * n_tokens);
    s.act = q;
    const size_t stride = s.act_stride;
    const CpuPath path = options.path;
    const GgmlType at = *act_type;
    if (n_tokens * cols >= kParallelQuantizeMin) {
      pool.parallel_for(n_tokens, [&](int64_t t0, int64_t t1, int) {
        for (int64_t t = t0; t < t1; ++t) quantize_activations(at, x + t * cols, q + t * stride, cols, path);
      });
    } else {
      for (int64_t t = 0; t < n_tokens; ++t) quantize_activations(at, x + t * cols, q + t * stride, cols, path);
    }
  }
  if (n_segments == 0) return;
  // Rows of all matrices, concatenated, in contiguous ranges per thread.
  pool.parallel_for(total_rows, [&](int64_t r0, int64_t r1, int) {
    for (size_t i = 0; i < n_segments; ++i) {
      const Segment& s = segments[i];
      const int64_t b = std::max(r0, s.first), e = std::min(r1, s.first + s.w->rows);
      if (b >= e) continue;
      const int64_t r = b - s.first;
      if (s.w->planar != nullptr && has_planar_kernel(s.w->type, options.path)) {
        quant_dot_tile_planar(s.w->type, s.w->planar + r * s.w->row_bytes, s.w->row_bytes, e - b, s.act,
                              s.act_stride, n_tokens, cols, s.y + r, s.ldy, options.path);
      } else {
        quant_dot_tile(s.w->type, s.w->row(r), s.w->row_bytes, e - b, s.act, s.act_stride, n_tokens, cols,
                       s.y + r, s.ldy, options.path);
      }
    }
  });
}

}  // namespace kvbench
