#include "tests/support/registry_specs.h"

#include "policies/registry.h"

namespace kvbench::test {

std::vector<std::string> registry_specs(int budget) {
  std::vector<std::string> out;
  const std::string b = "budget=" + std::to_string(budget);
  for (const auto& c : registry()) {
    const std::string name(c.name), example(c.example);
    std::string own = c.kind == ComponentKind::Scorer && c.param("budget") ? b : "";
    if (!example.empty()) own += (own.empty() ? "" : ",") + example;
    const std::string component = own.empty() ? name : name + ":" + own;
    out.push_back(c.kind == ComponentKind::Scorer ? component : "h2o:" + b + "+" + component);
  }
  return out;
}

}  // namespace kvbench::test
