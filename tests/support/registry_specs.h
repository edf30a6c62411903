// The policies the registry-wide tests run: one spec per registered
// component, built from the registry, so a new component is tested by
// being registered.
#pragma once

#include <string>
#include <vector>

namespace kvbench::test {

// A scorer alone at a token budget of `budget` (when it takes one); an
// allocator, storage or extra with h2o at that budget; each with the
// parameters its declaration gives as an example (ComponentInfo::example).
std::vector<std::string> registry_specs(int budget);

}  // namespace kvbench::test
