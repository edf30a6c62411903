#include "model/ops/planar.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace kvbench {
namespace {

constexpr int64_t kBlock = 32;

// A 4- or 5-bit block type: its size and where its fields sit (-1: absent).
struct NibbleBlock {
  size_t bytes;
  int m;   // f16 min
  int qh;  // 4 bytes of 5th bits
  int qs;  // 16 bytes of nibbles
};
constexpr NibbleBlock kQ4_0Block{18, -1, -1, 2};
constexpr NibbleBlock kQ4_1Block{20, 2, -1, 4};
constexpr NibbleBlock kQ5_0Block{22, -1, 2, 6};
constexpr NibbleBlock kQ5_1Block{24, 2, 4, 8};

// Where each byte of a GGUF row goes in the planar row [qs][qh][d][m].
// kForward copies GGUF -> planar; otherwise the same map is applied
// backwards. One map for both directions keeps them exact inverses.
template <bool kForward>
void nibble_rows(const NibbleBlock& k, const uint8_t* src, uint8_t* dst, int64_t nb) {
  const size_t blocks = static_cast<size_t>(nb);
  const size_t qh_plane = blocks * 16;
  const size_t d_plane = qh_plane + (k.qh >= 0 ? blocks * 4 : 0);
  const size_t m_plane = d_plane + blocks * 2;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t g = b * k.bytes;  // GGUF offset
    auto move = [&](size_t gguf, size_t planar, size_t bytes) {
      if constexpr (kForward) {
        std::memcpy(dst + planar, src + gguf, bytes);
      } else {
        std::memcpy(dst + gguf, src + planar, bytes);
      }
    };
    move(g + k.qs, b * 16, 16);
    if (k.qh >= 0) move(g + k.qh, qh_plane + b * 4, 4);
    move(g, d_plane + b * 2, 2);
    if (k.m >= 0) move(g + k.m, m_plane + b * 2, 2);
  }
}

template <bool kForward>
void q8_0_rows(const uint8_t* src, uint8_t* dst, int64_t nb) {
  const size_t d_plane = static_cast<size_t>(nb) * 32;
  for (int64_t q = 0; q < nb; q += 4) {
    const int64_t count = std::min<int64_t>(4, nb - q);
    for (int64_t g = 0; g < count; ++g) {
      const size_t gguf = static_cast<size_t>(q + g) * 34;
      // Elements 0-15 of block g of the quad, then 16-31 after all count lows.
      const size_t lo = static_cast<size_t>(q) * 32 + static_cast<size_t>(g) * 16;
      const size_t hi = lo + static_cast<size_t>(count) * 16;
      for (int e = 0; e < 32; ++e) {
        const size_t p = (e < 16 ? lo : hi) + (e % 16);
        if constexpr (kForward) {
          dst[p] = static_cast<uint8_t>(src[gguf + 2 + e] ^ 0x80);
        } else {
          dst[gguf + 2 + e] = static_cast<uint8_t>(src[p] ^ 0x80);
        }
      }
      const size_t dp = d_plane + static_cast<size_t>(q + g) * 2;
      if constexpr (kForward) {
        std::memcpy(dst + dp, src + gguf, 2);
      } else {
        std::memcpy(dst + gguf, src + dp, 2);
      }
    }
  }
}

template <bool kForward>
void convert(GgmlType type, const uint8_t* src, uint8_t* dst, int64_t n) {
  assert(has_planar_layout(type) && n % kBlock == 0);
  const int64_t nb = n / kBlock;
  switch (type) {
    case GgmlType::Q4_0:
      nibble_rows<kForward>(kQ4_0Block, src, dst, nb);
      return;
    case GgmlType::Q4_1:
      nibble_rows<kForward>(kQ4_1Block, src, dst, nb);
      return;
    case GgmlType::Q5_0:
      nibble_rows<kForward>(kQ5_0Block, src, dst, nb);
      return;
    case GgmlType::Q5_1:
      nibble_rows<kForward>(kQ5_1Block, src, dst, nb);
      return;
    case GgmlType::Q8_0:
      q8_0_rows<kForward>(src, dst, nb);
      return;
    default:
      return;
  }
}

}  // namespace

bool has_planar_layout(GgmlType type) {
  return type == GgmlType::Q4_0 || type == GgmlType::Q4_1 || type == GgmlType::Q5_0 ||
         type == GgmlType::Q5_1 || type == GgmlType::Q8_0;
}

void to_planar_row(GgmlType type, const uint8_t* src, uint8_t* dst, int64_t n) {
  convert<true>(type, src, dst, n);
}

void from_planar_row(GgmlType type, const uint8_t* src, uint8_t* dst, int64_t n) {
  convert<false>(type, src, dst, n);
}

}  // namespace kvbench
