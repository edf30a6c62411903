// A quantized weight matrix as the products read it: rows of GGML blocks in
// the GGUF mapping, and optionally the same rows in planar and interleaved
// layouts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/gguf/ggml_types.h"

namespace kvbench {

// A weight matrix W[rows][cols] (GGUF ne = {cols, rows}): y = W x maps
// x[cols] -> y[rows]. Row r starts at data + r * row_bytes.
struct WeightMatrix {
  GgmlType type = GgmlType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;
  const uint8_t* data = nullptr;
  // The same rows in planar layout (model/ops/planar.h), also row_bytes apart,
  // or null. Read by the kernels that have a planar version (quantized
  // products, and exact decode).
  const uint8_t* planar = nullptr;
  // The same rows in the interleaved layout (model/ops/interleave.h; groups
  // of 16 rows, rows a multiple of 16), or null. Read by the quantized
  // products of the legacy types (prefill and decode).
  const uint8_t* interleaved = nullptr;
  const uint8_t* row(int64_t r) const { return data + r * row_bytes; }
};

// Rows [first, first + count) of m as a matrix of their own (a fused
// tensor's parts: Phi-3's attn_qkv, its gate and up halves). Before any
// planar or interleaved copy is made (those are per matrix).
inline WeightMatrix row_slice(const WeightMatrix& m, int64_t first, int64_t count) {
  WeightMatrix s = m;
  s.rows = count;
  s.data = m.data + first * m.row_bytes;
  s.planar = nullptr;
  s.interleaved = nullptr;
  return s;
}

}  // namespace kvbench
