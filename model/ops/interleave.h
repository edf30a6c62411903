// The interleaved layout of a quantized weight matrix: 16 rows side by side,
// so that one 512-bit register holds the same four elements of 16 rows and a
// vpdpbusd against one broadcast activation quad (4 bytes) advances 16 dot
// products at once. The float steps of a block then serve 16 rows per
// instruction, and no horizontal sum is left at the end
// (quant_dot_scalar.cpp: the legacy order is one FMA chain per output).
//
// A group of 16 GGUF rows (each nb blocks of 32 elements) becomes nb group
// blocks, block b of the group at b * 16 * block_bytes (so the group takes
// the 16 rows' bytes, 16 * row_bytes, and group g of a matrix starts at
// g * 16 * row_bytes). A group block is, with r the row (0-15):
//   Q4_0 / Q4_1 (18 / 20 B per row block):
//     codes: 4 chunks of 64 B; chunk j, bytes 4r..4r+3 = the row's qs[4j..4j+3]
//            (low nibbles: elements 4j..4j+3, high nibbles: 16+4j..16+4j+3)
//     d[16] f16, (Q4_1) m[16] f16
//   Q5_0 / Q5_1 (22 / 24 B): the Q4 codes, then 4 x 16 B of 5th bits: chunk j's
//     low-nibble mask (u64, bit 4r+k = element 4j+k of row r) and high-nibble
//     mask (element 16+4j+k), so one masked add puts the bit on 64 codes;
//     then d[16], (Q5_1) m[16]
//   Q8_0 (34 B): 8 chunks of 64 B; chunk j, bytes 4r..4r+3 = elements
//     4j..4j+3 of row r as unsigned bytes q + 128 (vpdpbusd multiplies u8 by
//     s8); then d[16] f16.
// to_interleaved and from_interleaved are exact inverses.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/gguf/ggml_types.h"

namespace kvbench {

inline constexpr int64_t kInterleaveRows = 16;

// Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 have an interleaved layout.
bool has_interleaved_layout(GgmlType type);

// 16 GGUF rows of n elements (n a multiple of 32; row r at src + r *
// row_bytes) -> one interleaved group of 16 * row_bytes bytes, and back.
// src and dst must not overlap.
void to_interleaved(GgmlType type, const uint8_t* src, size_t row_bytes, uint8_t* dst, int64_t n);
void from_interleaved(GgmlType type, const uint8_t* src, uint8_t* dst, size_t row_bytes, int64_t n);

}  // namespace kvbench
