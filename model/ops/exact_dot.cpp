// The scalar reference of the exact path and the dispatch to the SIMD paths.
#include "model/ops/exact_dot.h"

#include <cassert>
#include <cmath>
#include <vector>

#include "model/ops/planar.h"

namespace kvbench {

float exact_dot_reference(const float* w, const float* x, int64_t n) {
  float lane[16] = {};
  for (int64_t i = 0; i < n; ++i) lane[i % 16] = std::fma(w[i], x[i], lane[i % 16]);
  for (int width = 8; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) lane[l] = lane[l] + lane[l + width];
  }
  return lane[0];
}

namespace {

const exact::Kernels* kernels_of(CpuPath path) {
  switch (path) {
    case CpuPath::Scalar:
      return nullptr;
    case CpuPath::Avx2:
      return exact::avx2_kernels();
    case CpuPath::Avx512:
      return exact::avx512_kernels();
  }
  return nullptr;
}

}  // namespace

void dequantize_row_fast(GgmlType type, const void* src, float* dst, int64_t n, CpuPath path) {
  const exact::Kernels* k = kernels_of(path);
  if (k == nullptr || k->dequantize == nullptr) return dequantize_row(type, src, dst, n);
  k->dequantize(type, static_cast<const uint8_t*>(src), dst, n);
}

void exact_dot_tile(GgmlType type, const void* w, size_t w_stride, int64_t n_rows, const float* x,
                    int64_t ldx, int64_t n_x, int64_t n, float* out, int64_t ldo, CpuPath path) {
  const auto* rows = static_cast<const uint8_t*>(w);
  const exact::Kernels* k = kernels_of(path);
  if (k != nullptr && k->tile != nullptr)
    return k->tile(type, rows, w_stride, n_rows, x, ldx, n_x, n, out, ldo);
  exact::tile_by_rows(type, rows, w_stride, n_rows, x, ldx, n_x, n, out, ldo, exact_dot_reference);
}

void exact::tile_by_rows(GgmlType type, const uint8_t* w, size_t w_stride, int64_t n_rows,
                         const float* x, int64_t ldx, int64_t n_x, int64_t n, float* out,
                         int64_t ldo, DotFn dot) {
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(n));
  for (int64_t r = 0; r < n_rows; ++r) {
    dequantize_row(type, w + r * w_stride, row.data(), n);
    for (int64_t t = 0; t < n_x; ++t) out[t * ldo + r] = dot(row.data(), x + t * ldx, n);
  }
}

namespace {
// The planar layouts the exact planar kernels read (the 5-bit ones go
// through the GGUF rows).
bool exact_reads_planar(GgmlType type) {
  return type == GgmlType::Q4_0 || type == GgmlType::Q4_1 || type == GgmlType::Q8_0;
}
}  // namespace

bool has_exact_planar_kernel(GgmlType type, CpuPath path) {
  const exact::Kernels* k = kernels_of(path);
  return exact_reads_planar(type) && k != nullptr && k->planar_tile != nullptr;
}

void exact_dot_tile_planar(GgmlType type, const void* w, size_t w_stride, int64_t n_rows,
                           const float* x, int64_t ldx, int64_t n_x, int64_t n, float* out,
                           int64_t ldo, CpuPath path) {
  assert(has_planar_layout(type));
  const auto* rows = static_cast<const uint8_t*>(w);
  const exact::Kernels* k = kernels_of(path);
  if (has_exact_planar_kernel(type, path)) {
    return k->planar_tile(type, rows, w_stride, n_rows, x, ldx, n_x, n, out, ldo);
  }
  thread_local std::vector<uint8_t> gguf;
  const size_t rb = row_bytes(type, n);
  gguf.resize(rb);
  for (int64_t r = 0; r < n_rows; ++r) {
    from_planar_row(type, rows + r * w_stride, gguf.data(), n);
    exact_dot_tile(type, gguf.data(), rb, 1, x, ldx, n_x, n, out + r, ldo, path);
  }
}

}  // namespace kvbench
