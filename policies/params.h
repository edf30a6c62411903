// Parameters several components declare alike (budget, timing, layers, a
// quantization group), so each component's declaration reads as its own
// parameters plus these.
#pragma once

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "policies/registry.h"
#include "policies/scorer.h"

namespace kvbench {

ParamInfo budget_param();
ParamInfo timing_param(std::string_view default_timing);
ParamInfo every_param();
ParamInfo layers_param();
ParamInfo group_param();
// An evicting scorer's parameters: budget, its own, timing, every, layers.
std::vector<ParamInfo> scorer_params(std::string_view default_timing,
                                     std::vector<ParamInfo> own = {});

// A scorer's declaration: kind Scorer, its factory making a T from the spec.
template <class T>
ComponentInfo scorer_component(std::string_view name, std::string_view summary,
                               std::vector<ParamInfo> params) {
  static_assert(std::is_base_of_v<Scorer, T>);
  return object_component<T>(name, summary, std::move(params));
}

}  // namespace kvbench
