#include "model/ops/matmul.h"

#include <algorithm>
#include <array>
#include <cassert>

#include "model/ops/exact_dot.h"
#include "model/ops/exact_gemm.h"
#include "model/ops/interleave.h"

namespace kvbench {
namespace {

constexpr int64_t kTileRows = 96;      // rows per exact prefill tile (3 panels)
constexpr int64_t kGemmMinTokens = 8;  // below this, row-wise dot products win
// Quantizing activations is ~1 ns per element: below this many elements a
// parallel region costs more than it saves.
constexpr int64_t kParallelQuantizeMin = 8192;
constexpr size_t kMaxGroup = 8;                 // matrices per matmul_group call
constexpr int64_t kUnitRows = kInterleaveRows;  // quantized rows per work unit

// Many tokens: one tile of rows [r0, r0 + nr) dequantized into `tile`
// ([nr][cols]), packed into panels and multiplied with all tokens
// (model/ops/exact_gemm.h: each output one FMA chain over the columns, so
// neither the tile nor the thread count changes a bit).
void exact_gemm_tile(const WeightMatrix& w, int64_t r0, int64_t nr, const float* x,
                     int64_t n_tokens, float* y, int64_t ldy, float* tile, float* panels,
                     CpuPath path) {
  const int64_t cols = w.cols;
  for (int64_t r = 0; r < nr; ++r)
    dequantize_row_fast(w.type, w.row(r0 + r), tile + r * cols, cols, path);
  exact_gemm_pack(tile, cols, nr, cols, panels);
  exact_gemm_panels(panels, nr, x, cols, n_tokens, cols, y + r0, ldy, path);
}

// One matrix of a Quantized group: its units of 16 rows occupy [first, first +
// ceil(rows / 16)) of the group's concatenated units.
struct Segment {
  const WeightMatrix* w = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
  const uint8_t* act = nullptr;  // [n_tokens][act_stride] activations of the weight's type
  size_t act_stride = 0;
  int64_t first = 0;
};

// One matrix of an Exact group. Few tokens: its rows occupy [first, first +
// rows) of the group's concatenated rows, decoded in registers
// (model/ops/exact_dot.h). Many tokens: its tiles of kTileRows rows are [first,
// first + tiles) of the group's tiles. Either way one parallel region.
struct ExactSegment {
  const WeightMatrix* w = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
  int64_t first = 0;
};
int64_t tiles_of(const WeightMatrix& w) { return (w.rows + kTileRows - 1) / kTileRows; }

void exact_rows(const ExactSegment& s, int64_t r0, int64_t r1, const float* x, int64_t n_tokens,
                CpuPath path) {
  const WeightMatrix& w = *s.w;
  // A planar copy, where there is one, has each 16 blocks' scales in one load.
  if (w.planar != nullptr && has_exact_planar_kernel(w.type, path)) {
    exact_dot_tile_planar(w.type, w.planar + r0 * w.row_bytes, w.row_bytes, r1 - r0, x, w.cols,
                          n_tokens, w.cols, s.y + r0, s.ldy, path);
  } else {
    exact_dot_tile(w.type, w.row(r0), w.row_bytes, r1 - r0, x, w.cols, n_tokens, w.cols, s.y + r0,
                   s.ldy, path);
  }
}

}  // namespace

float* MatmulScratch::get(int thread, size_t floats) {
  if (buffers_.size() <= static_cast<size_t>(thread)) buffers_.resize(thread + 1);
  auto& b = buffers_[thread];
  if (b.size() < floats) b.resize(floats);
  return b.data();
}

uint8_t* MatmulScratch::activations(GgmlType type, size_t bytes) {
  std::vector<uint8_t>& b = type == GgmlType::Q8_0   ? act_q8_0_
                            : type == GgmlType::Q8_1 ? act_q8_1_
                                                     : act_q8_k_;
  assert(type == GgmlType::Q8_0 || type == GgmlType::Q8_1 || type == GgmlType::Q8_K);
  if (b.size() < bytes) b.resize(bytes);
  return b.data();
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
  int64_t total_units = 0;
  std::array<ExactSegment, kMaxGroup> exact;
  size_t n_exact = 0;
  int64_t exact_total = 0;
  // Exact mode's GEMM sums in another order than its row-wise kernel.
  const bool exact_gemm = n_tokens >= kGemmMinTokens && !options.row_wise;
  for (const MatmulOutput& o : outputs) {
    assert(o.w->cols == cols && o.ldy >= o.w->rows);
    const auto act_type = dot_activation_type(o.w->type);
    if (options.mode == MatmulMode::Exact || !act_type) {
      exact[n_exact++] = ExactSegment{o.w, o.y, o.ldy, exact_total};
      exact_total += exact_gemm ? tiles_of(*o.w) : o.w->rows;
      continue;
    }
    Segment& s = segments[n_segments++];
    s.w = o.w;
    s.y = o.y;
    s.ldy = o.ldy;
    s.first = total_units;
    total_units += (o.w->rows + kUnitRows - 1) / kUnitRows;
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
        for (int64_t t = t0; t < t1; ++t)
          quantize_activations(at, x + t * cols, q + t * stride, cols, path);
      });
    } else {
      for (int64_t t = 0; t < n_tokens; ++t)
        quantize_activations(at, x + t * cols, q + t * stride, cols, path);
    }
  }
  if (n_exact > 0 && exact_gemm) {
    // Per thread: a tile of dequantized rows, then its panels.
    const size_t floats =
        static_cast<size_t>(kTileRows * cols + exact_gemm_panel_floats(kTileRows, cols));
    for (int t = 0; t < pool.size(); ++t) scratch.get(t, floats);
    pool.parallel_for(exact_total, [&](int64_t t0, int64_t t1, int thread) {
      float* tile = scratch.get(thread, floats);
      float* panels = tile + kTileRows * cols;
      for (size_t i = 0; i < n_exact; ++i) {
        const ExactSegment& s = exact[i];
        for (int64_t t = std::max(t0, s.first); t < std::min(t1, s.first + tiles_of(*s.w)); ++t) {
          const int64_t r0 = (t - s.first) * kTileRows;
          exact_gemm_tile(*s.w, r0, std::min(kTileRows, s.w->rows - r0), x, n_tokens, s.y, s.ldy,
                          tile, panels, options.path);
        }
      }
    });
  } else if (n_exact > 0) {
    pool.parallel_for(exact_total, [&](int64_t r0, int64_t r1, int) {
      for (size_t i = 0; i < n_exact; ++i) {
        const ExactSegment& s = exact[i];
        const int64_t b = std::max(r0, s.first), e = std::min(r1, s.first + s.w->rows);
        if (b < e) exact_rows(s, b - s.first, e - s.first, x, n_tokens, options.path);
      }
    });
  }
  if (n_segments == 0) return;
  // Rows of all matrices, concatenated, in units of 16 rows (an interleaved
  // group; a matrix's last unit may be shorter), contiguous ranges per thread.
  pool.parallel_for(total_units, [&](int64_t u0, int64_t u1, int) {
    for (size_t i = 0; i < n_segments; ++i) {
      const Segment& s = segments[i];
      const int64_t units = (s.w->rows + kUnitRows - 1) / kUnitRows;
      const int64_t b = std::max(u0, s.first), e = std::min(u1, s.first + units);
      if (b >= e) continue;
      const int64_t r = (b - s.first) * kUnitRows;
      const int64_t rows = std::min(s.w->rows, (e - s.first) * kUnitRows) - r;
      if (s.w->interleaved != nullptr && has_interleaved_kernel(s.w->type, options.path)) {
        quant_dot_tile_interleaved(s.w->type, s.w->interleaved + r * s.w->row_bytes, s.w->row_bytes,
                                   rows, s.act, s.act_stride, n_tokens, cols, s.y + r, s.ldy,
                                   options.path);
      } else {
        quant_dot_tile(s.w->type, s.w->row(r), s.w->row_bytes, rows, s.act, s.act_stride, n_tokens,
                       cols, s.y + r, s.ldy, options.path);
      }
    }
  });
}

}  // namespace kvbench
