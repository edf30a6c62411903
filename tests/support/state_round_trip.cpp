#include "tests/support/state_round_trip.h"

#include <sstream>
#include <string>

#include "policies/state_io.h"

namespace kvbench::test {

std::unique_ptr<PolicyCache> reloaded(const PolicyCache& cache) {
  std::ostringstream out;
  StateWriter w(out);
  cache.save_state(w);
  const std::string bytes = out.str();
  std::istringstream in(bytes);
  StateReader r(in, bytes.size(), "payload");
  return PolicyCache::load_state(r);
}

}  // namespace kvbench::test
