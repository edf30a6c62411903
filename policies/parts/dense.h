// Dense layers, as a part: the first `layers` layers are never compressed
// (Quest keeps its first two layers dense).
#pragma once

#include <memory>

#include "policies/part.h"

namespace kvbench {

std::shared_ptr<const Part> make_dense_part(int layers);

}  // namespace kvbench
