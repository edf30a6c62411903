// The scalar reference of exact_gemm, the panel packing and the dispatch.
#include "model/ops/exact_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kvbench {

void exact_gemm_reference(const float* w, int64_t ldw, int64_t n_rows, const float* x, int64_t ldx,
                          int64_t n_tokens, int64_t k, float* y, int64_t ldy) {
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < n_rows; ++r) {
      float acc = 0.0f;
      for (int64_t c = 0; c < k; ++c) acc = std::fma(w[r * ldw + c], x[t * ldx + c], acc);
      y[t * ldy + r] = acc;
    }
}

int64_t exact_gemm_panel_floats(int64_t n_rows, int64_t k) {
  return (n_rows + kPanelRows - 1) / kPanelRows * k * kPanelRows;
}

constexpr int64_t kPackCols = 16;

void exact_gemm_pack(const float* w, int64_t ldw, int64_t n_rows, int64_t k, float* panels) {
  const int64_t n_panels = (n_rows + kPanelRows - 1) / kPanelRows;
  for (int64_t p = 0; p < n_panels; ++p) {
    float* dst = panels + p * k * kPanelRows;
    const int64_t r0 = p * kPanelRows, nr = std::min(kPanelRows, n_rows - r0);
    if (nr < kPanelRows) std::memset(dst, 0, sizeof(float) * k * kPanelRows);
    // In blocks of kPackCols columns, so that the block's part of the panel
    // (kPackCols x 32 floats) stays in L1 while every row writes into it: a
    // whole row at a time strides over the panel's k x 128 bytes, more than
    // L1 holds at SmolLM2's widths, and made packing 14% of exact pp512.
    for (int64_t c0 = 0; c0 < k; c0 += kPackCols) {
      const int64_t c1 = std::min(k, c0 + kPackCols);
      for (int64_t r = 0; r < nr; ++r) {
        const float* src = w + (r0 + r) * ldw;
        for (int64_t c = c0; c < c1; ++c) dst[c * kPanelRows + r] = src[c];
      }
    }
  }
}

namespace {

// The reference's arithmetic read from panels (the scalar path).
void panels_scalar(const float* panels, int64_t n_rows, const float* x, int64_t ldx,
                   int64_t n_tokens, int64_t k, float* y, int64_t ldy) {
  for (int64_t r0 = 0; r0 < n_rows; r0 += kPanelRows) {
    const float* panel = panels + r0 / kPanelRows * k * kPanelRows;
    const int64_t nr = std::min(kPanelRows, n_rows - r0);
    for (int64_t t = 0; t < n_tokens; ++t)
      for (int64_t r = 0; r < nr; ++r) {
        float acc = 0.0f;
        for (int64_t c = 0; c < k; ++c)
          acc = std::fma(panel[c * kPanelRows + r], x[t * ldx + c], acc);
        y[t * ldy + r0 + r] = acc;
      }
  }
}

}  // namespace

void exact_gemm_panels(const float* panels, int64_t n_rows, const float* x, int64_t ldx,
                       int64_t n_tokens, int64_t k, float* y, int64_t ldy, CpuPath path) {
  exact::GemmPanelsFn f = nullptr;
  if (path == CpuPath::Avx512) f = exact::avx512_gemm_panels();
  if (path == CpuPath::Avx2) f = exact::avx2_gemm_panels();
  if (f == nullptr) f = panels_scalar;
  f(panels, n_rows, x, ldx, n_tokens, k, y, ldy);
}

}  // namespace kvbench
