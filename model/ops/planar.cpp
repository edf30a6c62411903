#include "model/ops/planar.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace kvbench {
namespace {

constexpr int64_t kBlock = 32;

// Where each byte of a GGUF row goes in the planar row. kForward copies GGUF
// -> planar; otherwise the same map is applied backwards. One map for both
// directions keeps them exact inverses.
template <bool kForward>
void nibble_rows(bool has_min, const uint8_t* src, uint8_t* dst, int64_t nb) {
  const size_t bb = has_min ? 20 : 18;  // block bytes
  const size_t qs = has_min ? 4 : 2;    // offset of qs in a block
  const size_t d_plane = static_cast<size_t>(nb) * 16;
  const size_t m_plane = d_plane + static_cast<size_t>(nb) * 2;
  for (int64_t b = 0; b < nb; ++b) {
    const size_t g = static_cast<size_t>(b) * bb;  // GGUF offset
    const size_t db = static_cast<size_t>(b) * 2;
    auto move = [&](size_t gguf, size_t planar, size_t bytes) {
      if constexpr (kForward) {
        std::memcpy(dst + planar, src + gguf, bytes);
      } else {
        std::memcpy(dst + gguf, src + planar, bytes);
      }
    };
    move(g + qs, static_cast<size_t>(b) * 16, 16);
    move(g, d_plane + db, 2);
    if (has_min) move(g + 2, m_plane + db, 2);
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
      nibble_rows<kForward>(false, src, dst, nb);
      return;
    case GgmlType::Q4_1:
      nibble_rows<kForward>(true, src, dst, nb);
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
  return type == GgmlType::Q4_0 || type == GgmlType::Q4_1 || type == GgmlType::Q8_0;
}

void to_planar_row(GgmlType type, const uint8_t* src, uint8_t* dst, int64_t n) {
  convert<true>(type, src, dst, n);
}

void from_planar_row(GgmlType type, const uint8_t* src, uint8_t* dst, int64_t n) {
  convert<false>(type, src, dst, n);
}

}  // namespace kvbench
