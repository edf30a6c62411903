// Policy spec strings and their JSON form.
//
//   spec      := component ('+' component)*
//   component := name [':' param '=' value (',' param '=' value)*]
//
// e.g. "hybrid:budget=512,split=0.7+int8+offload:page=16". At most one scorer
// (default `full`), one allocator (default `uniform`), one storage (default
// `f32`) and each extra once, in any order. Budgets are a token count
// (`budget=512`) or a ratio of the context (`budget=0.2`, a number with a
// point, in (0, 1]). Every name, parameter and value is checked against the
// registry (policies/registry.h); anything wrong is an InputError that lists
// what is valid.
//
// The canonical form (to_string) lists the components in kind order, the
// budget and the parameters that differ from their defaults, values
// normalised, so equal policies have equal strings. The JSON form is an array of objects
// [{"name": "hybrid", "budget": 512, "split": 0.7}, {"name": "int8"}, ...];
// policy_spec_from_json also accepts a spec string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "policies/registry.h"

namespace kvbench {

// A budget: `value` tokens, or `value` x the context length when `ratio`.
struct Budget {
  bool ratio = false;
  double value = 0.0;
  // Tokens for a context of `context_tokens` (ratio budgets need it > 0; at
  // least 1 token). Throws InputError for a ratio without a context.
  int64_t tokens(int64_t context_tokens) const;
  bool operator==(const Budget&) const = default;
};

struct ComponentSpec {
  std::string name;
  // The budget (always) and the parameters that differ from their defaults,
  // normalised, in registry order.
  std::vector<std::pair<std::string, std::string>> params;

  const ComponentInfo& info() const;  // asserts the name is registered
  // The value of `param` (explicit or default), normalised.
  std::string get(std::string_view param) const;
  int64_t get_int(std::string_view param) const;
  double get_number(std::string_view param) const;
  Budget get_budget(std::string_view param) const;
  bool has(std::string_view param) const;  // declared by the component
  bool operator==(const ComponentSpec&) const = default;
};

struct PolicySpec {
  ComponentSpec scorer{"full", {}};
  ComponentSpec allocator{"uniform", {}};
  ComponentSpec storage{"f32", {}};
  std::vector<ComponentSpec> extras;  // registry order

  const ComponentSpec* extra(std::string_view name) const;  // nullptr when absent
  bool operator==(const PolicySpec&) const = default;
};

PolicySpec parse_policy_spec(std::string_view text);
std::string to_string(const PolicySpec& spec);
nlohmann::json to_json(const PolicySpec& spec);
PolicySpec policy_spec_from_json(const nlohmann::json& j);

}  // namespace kvbench
