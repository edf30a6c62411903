// The `streaming` scorer (its declaration at the end).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/common/error.h"
#include "policies/params.h"
#include "policies/parts/rerotate.h"
#include "policies/scorer.h"
#include "policies/scorers/sinks_scorer.h"

namespace kvbench {
namespace {

// pos=contiguous brings the re-rotation part (the paper's position shift).
std::vector<std::shared_ptr<const Part>> streaming_parts(const ComponentSpec& s, const PartEnv&) {
  if (s.get("pos") != "contiguous") return {};
  return {make_rerotate_part()};
}

void check_streaming(const PolicySpec& s, const ComponentSpec& self) {
  const std::string spec = to_string(s);
  if (self.get("pos") == "contiguous") {
    const bool quantized =
        s.storage.name != "f32" && s.storage.name != "f16" && s.storage.name != "bf16";
    if (quantized)
      throw InputError("policy '" + spec + "': contiguous positions re-rotate stored keys, which " +
                       s.storage.name + " keys cannot be");
    if (s.extra("offload"))
      throw InputError("policy '" + spec +
                       "': contiguous positions renumber the cache, restored pages keep their own");
  }
  const Budget b = self.get_budget("budget");
  if (!b.ratio && b.value <= static_cast<double>(self.get_int("sinks")))
    throw InputError("policy '" + spec + "': streaming budget must exceed its sinks");
}

}  // namespace

ComponentInfo declare_streaming() {
  ComponentInfo c = scorer_component<SinksScorer>(
      "streaming", "StreamingLLM: the first `sinks` tokens (attention sinks) + the most recent",
      scorer_params("stream",
                    {{"sinks", ParamType::Int, "4", "attention-sink tokens always kept", 0, 1e6},
                     {"pos",
                      ParamType::Choice,
                      "original",
                      "positions: original, or contiguous inside the cache (keys re-rotated "
                      "after each eviction, as StreamingLLM)",
                      0,
                      0,
                      {"original", "contiguous"}}}));
  c.make_parts = streaming_parts;
  c.check = check_streaming;
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "sinks=2";
  return c;
}

}  // namespace kvbench
