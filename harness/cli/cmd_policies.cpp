// kvbench policies: the registry of cache-policy components (every name,
// parameter, default and a one-line description), as text or JSON; with
// --check SPEC, the spec's canonical form and JSON (or "error: ..." and exit 2).
#include <iostream>

#include <nlohmann/json.hpp>

#include "harness/cli/cli.h"
#include "policies/policy_spec.h"
#include "policies/registry.h"

namespace po = boost::program_options;

namespace kvbench::cli {
namespace {

std::string param_type(const ParamInfo& p) {
  switch (p.type) {
    case ParamType::Budget:
      return "budget";
    case ParamType::Int:
      return "int";
    case ParamType::Number:
      return "number";
    case ParamType::Text:
      return "text";
    case ParamType::Choice: {
      std::string s;
      for (auto c : p.choices) s += (s.empty() ? "" : "|") + std::string(c);
      return s;
    }
  }
  return "?";
}

nlohmann::json registry_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : registry()) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : c.params) {
      nlohmann::json j = {{"name", p.name},
                          {"type", param_type(p)},
                          {"default", p.default_value},
                          {"description", p.description}};
      if (p.type == ParamType::Int || p.type == ParamType::Number) j["range"] = {p.min, p.max};
      params.push_back(std::move(j));
    }
    out.push_back({{"name", c.name},
                   {"kind", kind_name(c.kind)},
                   {"summary", c.summary},
                   {"params", params}});
  }
  return out;
}

void print_text(std::ostream& os) {
  os << "A policy is scorer [+ allocator] [+ storage] [+ extras], e.g.\n"
        "  hybrid:budget=512,split=0.7+int8+offload:page=16\n"
        "Budgets are tokens per KV head (512) or a ratio of the context (0.2).\n";
  for (ComponentKind k : {ComponentKind::Scorer, ComponentKind::Allocator, ComponentKind::Storage,
                          ComponentKind::Extra}) {
    os << "\n"
       << kind_name(k) << (k == ComponentKind::Storage ? "" : "s")
       << (k == ComponentKind::Scorer ? "  (default full)" : "")
       << (k == ComponentKind::Allocator ? "  (default uniform)" : "")
       << (k == ComponentKind::Storage ? "  (default f32)" : "") << "\n";
    for (const auto& c : registry()) {
      if (c.kind != k) continue;
      os << "  " << c.name << std::string(c.name.size() < 11 ? 11 - c.name.size() : 1, ' ')
         << c.summary << "\n";
      for (const auto& p : c.params) {
        const std::string head = std::string(p.name) + "=" + std::string(p.default_value);
        os << "      " << head << std::string(head.size() < 18 ? 18 - head.size() : 1, ' ') << "("
           << param_type(p) << ") " << p.description << "\n";
      }
    }
  }
}

}  // namespace

int cmd_policies(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("json", po::bool_switch(), "print the registry (or the checked spec) as JSON")(
      "check", po::value<std::string>(), "parse SPEC: print its canonical form and JSON, or fail");
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench policies [--json] [--check SPEC]")) return 0;
  if (vm.count("check")) {
    const PolicySpec spec = parse_policy_spec(vm["check"].as<std::string>());
    if (vm["json"].as<bool>()) {
      std::cout << nlohmann::json{{"spec", to_string(spec)}, {"components", to_json(spec)}}.dump(2)
                << "\n";
    } else {
      std::cout << to_string(spec) << "\n" << to_json(spec).dump() << "\n";
    }
    return 0;
  }
  if (vm["json"].as<bool>())
    std::cout << registry_json().dump(2) << "\n";
  else
    print_text(std::cout);
  return 0;
}

}  // namespace kvbench::cli
