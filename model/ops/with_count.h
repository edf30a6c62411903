// Blocked loops hand their remainder to micro-kernels unrolled for a fixed
// row count (heads, rows, tokens): each count from 1 to kMax is its own
// instantiation, and with_count picks the one for a run-time count. Include
// inside the target region of the path that uses it; internal linkage, so
// each path compiles its own copy (simd_target.h says why).
#pragma once

#include <cstdint>

namespace kvbench {
namespace {

// f.template operator()<N>() with N = min(n, kMax), for n >= 1.
template <int kMax, class F>
inline void with_count(int64_t n, F&& f) {
  if constexpr (kMax > 1) {
    if (n < kMax) return with_count<kMax - 1>(n, f);
  }
  f.template operator()<kMax>();
}

}  // namespace
}  // namespace kvbench
