// libFuzzer target for experiment configs and --set overrides. The input is
// a config's JSON text, then (after a NUL byte) --set assignments, one per
// line. Any input must be refused with InputError (never another exception,
// a crash, a hang or undefined behaviour) or give a config whose resolved
// form (to_json, as written to a run folder's config.json) parses back to
// itself — what `kvbench run --resume` relies on.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/json_text.h"
#include "harness/run/experiment.h"
#include "model/common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvbench;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string text = input.substr(0, nul);
  std::vector<std::string> overrides;
  if (nul != std::string::npos) {
    std::istringstream lines(input.substr(nul + 1));
    for (std::string line; std::getline(lines, line) && overrides.size() < 16;)
      overrides.push_back(line);
  }
  try {
    nlohmann::json doc = parse_json_text(text, "fuzz.json");
    for (const auto& o : overrides) apply_override(doc, o);
    const ExperimentConfig config = parse_experiment(doc, "fuzz.json");
    const nlohmann::json resolved = to_json(config);
    // Written and read back as a run folder does.
    const nlohmann::json again = parse_json_text(resolved.dump(), "config.json");
    const ExperimentConfig reparsed = parse_experiment(again, "config.json");
    if (to_json(reparsed) != resolved) std::abort();
  } catch (const InputError&) {
  }
  return 0;
}
