#include "tests/support/registry_specs.h"

#include "policies/registry.h"

namespace kvbench::test {

std::vector<std::string> registry_specs(int budget) {
  std::vector<std::string> out;
  const std::string b = "budget=" + std::to_string(budget);
  // A component with its budget (scorers) and its example parameters.
  auto with_example = [&](const ComponentInfo& c) {
    const std::string name(c.name), example(c.example);
    std::string own = c.kind == ComponentKind::Scorer && c.param("budget") ? b : "";
    if (!example.empty()) own += (own.empty() ? "" : ",") + example;
    return own.empty() ? name : name + ":" + own;
  };
  for (const auto& c : registry()) {
    if (c.kind == ComponentKind::Scorer) {
      out.push_back(with_example(c));
      continue;
    }
    // Others compose with the scorer they name (h2o unless they say).
    const ComponentInfo* scorer = find_component(c.example_scorer);
    out.push_back(with_example(*scorer) + "+" + with_example(c));
  }
  return out;
}

}  // namespace kvbench::test
