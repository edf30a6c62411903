// The `merge` extra: evicted entries folded into one summary entry per head.
#pragma once

#include "policies/part.h"
#include "policies/registry.h"

namespace kvbench {

ComponentInfo declare_merge();

}  // namespace kvbench
