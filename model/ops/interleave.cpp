#include "model/ops/interleave.h"

#include <cassert>
#include <cstring>

namespace kvbench {
namespace {

constexpr int64_t kBlock = 32;
constexpr int kRows = static_cast<int>(kInterleaveRows);

// Where a row block's fields sit (-1: absent) and its size.
struct RowBlock {
  size_t bytes;
  int m;   // f16 min
  int qh;  // 4 bytes of 5th bits
  int qs;  // 16 bytes of nibbles, or 32 signed bytes (Q8_0)
  bool q8;
};
RowBlock row_block(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0:
      return {18, -1, -1, 2, false};
    case GgmlType::Q4_1:
      return {20, 2, -1, 4, false};
    case GgmlType::Q5_0:
      return {22, -1, 2, 6, false};
    case GgmlType::Q5_1:
      return {24, 2, 4, 8, false};
    case GgmlType::Q8_0:
      return {34, -1, -1, 2, true};
    default:
      return {0, -1, -1, -1, false};
  }
}

// One map for both directions keeps them exact inverses: kForward copies a
// row block's bytes into the group block, otherwise back.
template <bool kForward>
void convert_block(const RowBlock& k, uint8_t* rows, size_t row_bytes, int64_t b, uint8_t* grp) {
  const size_t codes = k.q8 ? 8 * 64 : 4 * 64;
  const size_t masks = k.qh >= 0 ? 4 * 16 : 0;
  const size_t d_plane = codes + masks;
  const size_t m_plane = d_plane + 2 * kRows;
  for (int r = 0; r < kRows; ++r) {
    uint8_t* rb = rows + r * row_bytes + static_cast<size_t>(b) * k.bytes;
    auto move = [&](uint8_t* row_at, uint8_t* grp_at, size_t n) {
      if constexpr (kForward) {
        std::memcpy(grp_at, row_at, n);
      } else {
        std::memcpy(row_at, grp_at, n);
      }
    };
    move(rb, grp + d_plane + 2 * r, 2);
    if (k.m >= 0) move(rb + k.m, grp + m_plane + 2 * r, 2);
    if (k.q8) {
      for (int j = 0; j < 8; ++j) {
        for (int e = 0; e < 4; ++e) {
          uint8_t& g = grp[64 * j + 4 * r + e];
          uint8_t& q = rb[k.qs + 4 * j + e];
          if constexpr (kForward) {
            g = static_cast<uint8_t>(q ^ 0x80);  // q + 128 as an unsigned byte
          } else {
            q = static_cast<uint8_t>(g ^ 0x80);
          }
        }
      }
      continue;
    }
    for (int j = 0; j < 4; ++j) move(rb + k.qs + 4 * j, grp + 64 * j + 4 * r, 4);
    if (k.qh < 0) continue;
    // 5th bits: element e of the row is bit e of its qh word. Chunk j's low
    // mask holds elements 4j..4j+3 at bits 4r..4r+3, its high mask 16+4j...
    uint8_t* mk = grp + codes;
    if constexpr (kForward) {
      uint32_t qh;
      std::memcpy(&qh, rb + k.qh, 4);
      for (int j = 0; j < 4; ++j) {
        for (int half = 0; half < 2; ++half) {
          uint64_t mask;
          std::memcpy(&mask, mk + 16 * j + 8 * half, 8);
          const uint64_t bits = (qh >> (16 * half + 4 * j)) & 0xF;
          mask = (mask & ~(uint64_t{0xF} << (4 * r))) | (bits << (4 * r));
          std::memcpy(mk + 16 * j + 8 * half, &mask, 8);
        }
      }
    } else {
      uint32_t qh = 0;
      for (int j = 0; j < 4; ++j) {
        for (int half = 0; half < 2; ++half) {
          uint64_t mask;
          std::memcpy(&mask, mk + 16 * j + 8 * half, 8);
          qh |= static_cast<uint32_t>((mask >> (4 * r)) & 0xF) << (16 * half + 4 * j);
        }
      }
      std::memcpy(rb + k.qh, &qh, 4);
    }
  }
}

}  // namespace

bool has_interleaved_layout(GgmlType type) { return row_block(type).bytes != 0; }

void to_interleaved(GgmlType type, const uint8_t* src, size_t row_bytes, uint8_t* dst, int64_t n) {
  const RowBlock k = row_block(type);
  assert(k.bytes != 0 && n % kBlock == 0);
  const int64_t nb = n / kBlock;
  const size_t group_block = kRows * k.bytes;
  if (k.qh >= 0) std::memset(dst, 0, static_cast<size_t>(nb) * group_block);  // masks are OR-ed
  for (int64_t b = 0; b < nb; ++b)
    convert_block<true>(k, const_cast<uint8_t*>(src), row_bytes, b, dst + b * group_block);
}

void from_interleaved(GgmlType type, const uint8_t* src, uint8_t* dst, size_t row_bytes,
                      int64_t n) {
  const RowBlock k = row_block(type);
  assert(k.bytes != 0 && n % kBlock == 0);
  const int64_t nb = n / kBlock;
  const size_t group_block = kRows * k.bytes;
  for (int64_t b = 0; b < nb; ++b)
    convert_block<false>(k, dst, row_bytes, b, const_cast<uint8_t*>(src) + b * group_block);
}

}  // namespace kvbench
