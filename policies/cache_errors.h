// Typed errors of the cache store's sequence operations. Both are
// InputErrors (the CLI prints "error: <what>" and exits 2); tests and the
// harness can tell them apart.
#pragma once

#include "model/common/error.h"

namespace kvbench {

// A sequence id outside [0, 64) (or -1 where "all" is not allowed), an
// unknown sequence, a position beyond int32 or negative other than -1, an
// empty or reversed range; a step's position or a shifted one outside
// [0, kMaxPosition] (positions.h).
class SequenceError : public InputError {
 public:
  using InputError::InputError;
};

// An operation the stored entries do not support, e.g. shifting positions of
// entries whose keys are quantized (they cannot be re-rotated) or that other
// sequences share.
class UnsupportedOperation : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace kvbench
