// A half-open range [begin, end) of characters (bytes) or tokens: needle
// spans in a prompt, prefill chunks.
#pragma once

#include <cstdint>

namespace kvbench {

struct Span {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  friend bool operator==(const Span&, const Span&) = default;
};

}  // namespace kvbench
