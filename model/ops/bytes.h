// Little-endian fields at any byte address (the scales, masks and sums inside
// GGUF and activation blocks), read with std::memcpy, which compilers turn
// into one load. Plain code: the instruction-set files include it before
// their target region, and it inlines into every path.
#pragma once

#include <cstdint>
#include <cstring>

namespace kvbench {

template <class T>
inline T load_as(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
inline uint16_t load_u16(const uint8_t* p) { return load_as<uint16_t>(p); }
inline uint32_t load_u32(const uint8_t* p) { return load_as<uint32_t>(p); }
inline int32_t load_i32(const uint8_t* p) { return load_as<int32_t>(p); }
inline uint64_t load_u64(const uint8_t* p) { return load_as<uint64_t>(p); }

}  // namespace kvbench
