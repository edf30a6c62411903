// A cache through its snapshot state and back, as a snapshot file stores it
// (save_state, then load_state), for tests of what the state carries.
#pragma once

#include <memory>

#include "policies/policy_cache.h"

namespace kvbench::test {

std::unique_ptr<PolicyCache> reloaded(const PolicyCache& cache);

}  // namespace kvbench::test
