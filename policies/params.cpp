#include "policies/params.h"

namespace kvbench {

ParamInfo budget_param() {
  return {"budget", ParamType::Budget, "512",
          "entries kept per KV head: tokens (512) or a ratio of the context (0.2)"};
}
ParamInfo timing_param(std::string_view def) {
  return {"timing",
          ParamType::Choice,
          def,
          "when to evict: stream (after every chunk and step), once (after prefill), every (after "
          "prefill and every N decode steps), call (the seed's: after the prompt as one call, then "
          "after every decode step)",
          0,
          0,
          {"stream", "once", "every", "call"}};
}
ParamInfo every_param() {
  return {"every", ParamType::Int, "8", "decode steps between evictions with timing=every", 1, 1e6};
}
ParamInfo layers_param() {
  return {"layers",
          ParamType::Choice,
          "all",
          "layers compressed on a model with sliding-window layers (gemma3); a ratio budget on "
          "a local layer is a ratio of its window",
          0,
          0,
          {"all", "global", "local"}};
}
std::vector<ParamInfo> scorer_params(std::string_view timing, std::vector<ParamInfo> own) {
  std::vector<ParamInfo> p{budget_param()};
  p.insert(p.end(), own.begin(), own.end());
  p.push_back(timing_param(timing));
  p.push_back(every_param());
  p.push_back(layers_param());
  return p;
}
ParamInfo group_param() {
  return {"group", ParamType::Int,
          "32",    "elements per quantization group (capped at head_dim, must divide it)",
          1,       4096};
}

}  // namespace kvbench
