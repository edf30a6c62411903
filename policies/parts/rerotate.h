// Contiguous positions, as a part (StreamingLLM's position shift, kvpress's
// KeyRerotationPress): after each eviction a sequence's entries are
// renumbered contiguously in arrival order, ending at the newest entry's
// position, their keys re-rotated; the next token takes the position after
// the cache's last. Renumbered entries cannot be shared between sequences.
#pragma once

#include <memory>

#include "policies/part.h"

namespace kvbench {

std::shared_ptr<const Part> make_rerotate_part();

}  // namespace kvbench
