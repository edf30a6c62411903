// A cache (or any part with a snapshot state) through its state bytes and
// back, as a snapshot file stores them, for tests of what the state carries.
#pragma once

#include <functional>
#include <memory>
#include <sstream>
#include <string>

#include "policies/policy_cache.h"
#include "policies/state_io.h"

namespace kvbench::test {

// What `save` writes to a StateWriter, as bytes.
std::string saved_bytes(const std::function<void(StateWriter&)>& save);

// A StateReader over `bytes`, named "payload" in its errors.
struct PayloadReader {
  explicit PayloadReader(const std::string& bytes)
      : in(bytes), reader(in, bytes.size(), "payload") {}
  std::istringstream in;
  StateReader reader;
};

// The cache's state (save_state) as bytes, and a cache loaded from such
// bytes (load_state).
std::string state_bytes(const PolicyCache& cache);
std::unique_ptr<PolicyCache> load_bytes(const std::string& bytes);

// The two: `cache` saved and loaded again.
std::unique_ptr<PolicyCache> reloaded(const PolicyCache& cache);

}  // namespace kvbench::test
