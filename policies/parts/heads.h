// Heads that keep everything, as a part (DuoAttention's retrieval heads):
// which heads from a calibration file of "layer kv_head score" lines
// (`kvbench heads` writes one); the `retrieval` share of the listed heads
// with the highest scores keep every entry, the others follow the scorer to
// the budget. Works with allocators that do not move budget between heads
// (uniform, pyramid).
#pragma once

#include <memory>
#include <string>

#include "policies/part.h"

namespace kvbench {

// path "none": no head keeps everything.
std::shared_ptr<const Part> make_heads_part(const std::string& path, double retrieval);

}  // namespace kvbench
