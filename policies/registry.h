// The registry of cache-policy components: one table of names, kinds,
// parameters (type, default, range, one-line description) that drives spec
// parsing and validation, `kvbench policies`, and the tests. A policy is
// scorer x allocator x storage x extras (+ the scorer's timing):
//
//   scorer     which entries to keep (full, window, streaming, h2o, ...)
//   allocator  how many entries each layer / KV head keeps (uniform, pyramid, adakv)
//   storage    precision of the hot entries (f32, f16, bf16, int8, int4, kivi2, mixed)
//   extra      what happens to evicted entries (offload to a cold tier, merge into a summary)
//
// Adding a scorer: its class and factory in one file of policies/scorers/,
// the factory's declaration and one row in registry.cpp.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvbench {

class Scorer;
class Allocator;
struct ComponentSpec;

enum class ComponentKind { Scorer, Allocator, Storage, Extra };
std::string_view kind_name(ComponentKind kind);

enum class ParamType {
  Budget,  // tokens (integer >= 1) or a ratio of the context (a number with '.', in (0, 1])
  Int,     // integer in [min, max]
  Number,  // real in [min, max]
  Choice,  // one of `choices`
  Text,    // any non-empty text without ',' or '+' (e.g. a directory)
};

struct ParamInfo {
  std::string_view name;
  ParamType type;
  std::string_view default_value;
  std::string_view description;
  double min = 0.0, max = 0.0;                 // Int, Number
  std::vector<std::string_view> choices = {};  // Choice
};

using ScorerFactory = std::shared_ptr<const Scorer> (*)(const ComponentSpec&);
using AllocatorFactory = std::shared_ptr<const Allocator> (*)(const ComponentSpec&);

struct ComponentInfo {
  std::string_view name;
  ComponentKind kind;
  std::string_view summary;
  std::vector<ParamInfo> params;
  ScorerFactory make_scorer = nullptr;        // scorers
  AllocatorFactory make_allocator = nullptr;  // allocators

  const ParamInfo* param(std::string_view name) const;
  std::string param_names() const;  // "budget, sinks, pos"
};

// The policy every other is measured against: every entry, f32, no
// eviction. The harness names it only through this constant.
inline constexpr std::string_view kReferencePolicy = "full";

// Every component, in the order `kvbench policies` lists them.
const std::vector<ComponentInfo>& registry();
// nullptr when unknown.
const ComponentInfo* find_component(std::string_view name);
// "scorers: full, window, ...; allocators: ...; storage: ...; extras: ..."
std::string registry_names();

}  // namespace kvbench
