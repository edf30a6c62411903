#include "tests/support/state_round_trip.h"

namespace kvbench::test {

std::string saved_bytes(const std::function<void(StateWriter&)>& save) {
  std::ostringstream out;
  StateWriter w(out);
  save(w);
  return out.str();
}

std::string state_bytes(const PolicyCache& cache) {
  return saved_bytes([&](StateWriter& w) { cache.save_state(w); });
}

std::unique_ptr<PolicyCache> load_bytes(const std::string& bytes) {
  PayloadReader p(bytes);
  return PolicyCache::load_state(p.reader);
}

std::unique_ptr<PolicyCache> reloaded(const PolicyCache& cache) {
  return load_bytes(state_bytes(cache));
}

}  // namespace kvbench::test
