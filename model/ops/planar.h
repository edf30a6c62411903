// The planar layout of a quantized weight row: the same bytes as the GGUF
// row, regrouped so that a SIMD kernel loads codes and scales with plain
// vector loads instead of gathering them out of interleaved blocks.
//
// A GGUF Q4_1 row is nb blocks of {d f16, m f16, qs[16]}; its planar row is
//   [qs of block 0 .. nb-1 : nb x 16 B][d plane : nb x f16][m plane : nb x f16]
// so four blocks' codes are one 64-byte load and sixteen blocks' scales one
// 32-byte load. Q4_0 is the same without the m plane. Q5_0 ({d, qh[4],
// qs[16]}) and Q5_1 ({d, m, qh[4], qs[16]}) put a qh plane (nb x 4 B) between
// the codes and the d plane, so four blocks' 5th bits are one 16-byte load:
//   [qs : nb x 16 B][qh : nb x 4 B][d : nb x f16]([m : nb x f16])
// Q8_0 ({d f16, qs[32]})
// keeps, per group of four blocks, the elements 0-15 of the four blocks
// (count x 16 B) and then their elements 16-31 (count x 16 B) — the two
// registers the kernel multiplies — with each code stored as the unsigned
// byte q + 128; then the d plane.
//
// Row sizes do not change (row_bytes() of the type), so row r of a planar
// matrix still starts at r * row_bytes. to_planar_row and from_planar_row are
// exact inverses; the kernels that read planar rows (exact decode,
// exact_dot_tile_planar) give bit-identical results to those on the GGUF rows.
// The quantized products read the interleaved layout instead
// (model/ops/interleave.h).
#pragma once

#include <cstdint>

#include "model/gguf/ggml_types.h"

namespace kvbench {

// Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 have a planar layout.
bool has_planar_layout(GgmlType type);

// One row of n elements (n a multiple of 32), GGUF layout -> planar layout and
// back. src and dst must not overlap.
void to_planar_row(GgmlType type, const uint8_t* src, uint8_t* dst, int64_t n);
void from_planar_row(GgmlType type, const uint8_t* src, uint8_t* dst, int64_t n);

}  // namespace kvbench
