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
// Every component declares itself in its own file (`declare_<name>()`:
// name, summary, parameters, factory, the parts it brings, its rules);
// registry.cpp lists the declarations, one line each. Adding a scorer: its
// file in policies/scorers/ and that line.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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

// What a scorer's priorities are, for a part that needs them in kvpress's
// linear units (CriticalKV adds an epsilon to them): anything but Opaque is
// attention probability up to a known transform.
enum class ScoreUnits {
  Opaque,          // an order only (recency, norms, hindsight, ...)
  Probability,     // attention probabilities as kvpress scores them
  LogProbability,  // their logarithm (expected attention)
  WindowSum,       // summed over the layer's kept queries and the group's
                   // query heads (SnapKV's votes): kvpress's mean times their count
};

class Part;
struct CacheContext;
struct PolicySpec;

// What a part's factory may read besides its component's spec: the cache's
// context (a ratio budget's context, the layers' windows) and its scorer.
struct PartEnv {
  const CacheContext& ctx;
  const Scorer& scorer;
};

using ScorerFactory = std::shared_ptr<const Scorer> (*)(const ComponentSpec&);
using AllocatorFactory = std::shared_ptr<const Allocator> (*)(const ComponentSpec&);
using PartsFactory = std::vector<std::shared_ptr<const Part>> (*)(const ComponentSpec&,
                                                                  const PartEnv&);

struct ComponentInfo {
  std::string_view name;
  ComponentKind kind;
  std::string_view summary;
  std::vector<ParamInfo> params;
  ScorerFactory make_scorer = nullptr;        // scorers
  AllocatorFactory make_allocator = nullptr;  // allocators
  // The parts the component brings (policies/part.h): an extra is one; a
  // scorer may bring some with it (quest: paging and dense layers).
  PartsFactory make_parts = nullptr;
  // Rules across components that parsing alone cannot see (tova's one token
  // set per layer against adakv's per-head budgets): InputError naming the
  // spec. Called for every component of a parsed spec.
  void (*check)(const PolicySpec& spec, const ComponentSpec& self) = nullptr;
  // Storage and extras: true when a cache with it holds exactly what a full
  // f32 cache holds until maintenance first evicts or the prompt ends (f32;
  // extras that act on evicted entries, choose them, or act after the
  // prompt), so the runner may start it from the full cache's prefill
  // (tests/test_policy_start.cpp checks every composition).
  bool lossless_until_eviction = false;
  // Scorers: what their priorities are (ScoreUnits).
  ScoreUnits units = ScoreUnits::Opaque;
  // Parameters the registry-wide tests give the component besides a small
  // token budget ("window=4,kernel=3": snapkv's window must fit it).
  std::string_view example = "";
  // Extras: the scorer the registry-wide tests compose the extra with.
  std::string_view example_scorer = "h2o";

  const ParamInfo* param(std::string_view name) const;
  std::string param_names() const;  // "budget, sinks, pos"
};

// The declaration of a component whose objects are T, a Scorer or an
// Allocator: its kind and its factory (a T made from the spec) follow from
// T's base.
template <class T>
ComponentInfo object_component(std::string_view name, std::string_view summary,
                               std::vector<ParamInfo> params) {
  constexpr bool kScorer = std::is_base_of_v<Scorer, T>;
  static_assert(kScorer || std::is_base_of_v<Allocator, T>, "T is a Scorer or an Allocator");
  ComponentInfo c{name, kScorer ? ComponentKind::Scorer : ComponentKind::Allocator, summary,
                  std::move(params)};
  if constexpr (kScorer) {
    c.make_scorer = [](const ComponentSpec& s) -> std::shared_ptr<const Scorer> {
      return std::make_shared<T>(s);
    };
  } else {
    c.make_allocator = [](const ComponentSpec& s) -> std::shared_ptr<const Allocator> {
      return std::make_shared<T>(s);
    };
  }
  return c;
}

// The declaration of an extra: its parts and its rule across components.
// Every extra so far acts on what maintenance evicts (offload, merge), on
// how it chooses (chunkkv, critical) or after the prompt (think), so a cache
// with it holds the full cache's state until then and may start from the
// shared prefill (lossless_until_eviction); one that changes entries earlier
// must set it false.
inline ComponentInfo extra_component(std::string_view name, std::string_view summary,
                                     std::vector<ParamInfo> params, PartsFactory parts,
                                     void (*check)(const PolicySpec&,
                                                   const ComponentSpec&) = nullptr) {
  ComponentInfo c{name, ComponentKind::Extra, summary, std::move(params)};
  c.make_parts = parts;
  c.check = check;
  c.lossless_until_eviction = true;
  return c;
}

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
