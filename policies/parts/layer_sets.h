// One token set per layer, as a part (TOVA): each entry's priority is summed
// over the layer's KV heads, so every head keeps the same tokens.
#pragma once

#include <memory>

#include "policies/part.h"

namespace kvbench {

std::shared_ptr<const Part> make_layer_sets_part();

}  // namespace kvbench
