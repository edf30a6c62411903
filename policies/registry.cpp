#include "policies/registry.h"

#include "model/common/enum_names.h"

namespace kvbench {

// Every component, one line each, in the order `kvbench policies` lists
// them (scorers, allocators, storages, extras). Each declares itself in its
// own file: `ComponentInfo declare_<name>()` (name, summary, parameters,
// factory, the parts it brings, its rules). A new component is its file
// and its line here.
#define KVBENCH_COMPONENTS(X) \
  X(full)                     \
  X(window)                   \
  X(streaming)                \
  X(h2o)                      \
  X(hybrid)                   \
  X(snapkv)                   \
  X(expected)                 \
  X(duo)                      \
  X(cam)                      \
  X(tova)                     \
  X(knorm)                    \
  X(keydiff)                  \
  X(lagkv)                    \
  X(random)                   \
  X(oracle)                   \
  X(quest)                    \
  X(kvzip)                    \
  X(uniform)                  \
  X(pyramid)                  \
  X(adakv)                    \
  X(global)                   \
  X(f32)                      \
  X(f16)                      \
  X(bf16)                     \
  X(int8)                     \
  X(int4)                     \
  X(kivi2)                    \
  X(mixed)                    \
  X(offload)                  \
  X(merge)                    \
  X(chunkkv)                  \
  X(critical)                 \
  X(think)

#define KVBENCH_DECLARE(name) ComponentInfo declare_##name();
KVBENCH_COMPONENTS(KVBENCH_DECLARE)
#undef KVBENCH_DECLARE

namespace {

std::vector<ComponentInfo> build() {
#define KVBENCH_CALL(name) declare_##name(),
  return {KVBENCH_COMPONENTS(KVBENCH_CALL)};
#undef KVBENCH_CALL
}

}  // namespace

std::string_view kind_name(ComponentKind kind) {
  static constexpr std::string_view names[] = {"scorer", "allocator", "storage", "extra"};
  return enum_name<ComponentKind::Extra>(kind, names, "?");
}

const ParamInfo* ComponentInfo::param(std::string_view n) const {
  for (const auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

std::string ComponentInfo::param_names() const {
  std::string s;
  for (const auto& p : params) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s.empty() ? "none" : s;
}

const std::vector<ComponentInfo>& registry() {
  static const std::vector<ComponentInfo> table = build();
  return table;
}

const ComponentInfo* find_component(std::string_view name) {
  for (const auto& c : registry())
    if (c.name == name) return &c;
  return nullptr;
}

std::string registry_names() {
  std::string out;
  for (ComponentKind k : {ComponentKind::Scorer, ComponentKind::Allocator, ComponentKind::Storage,
                          ComponentKind::Extra}) {
    std::string names;
    for (const auto& c : registry())
      if (c.kind == k) names += (names.empty() ? "" : ", ") + std::string(c.name);
    const std::string_view label = k == ComponentKind::Scorer      ? "scorers"
                                   : k == ComponentKind::Allocator ? "allocators"
                                   : k == ComponentKind::Storage   ? "storage"
                                                                   : "extras";
    out += (out.empty() ? "" : "; ") + std::string(label) + ": " + names;
  }
  return out;
}

}  // namespace kvbench
