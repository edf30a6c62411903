// The `duo` scorer (its declaration at the end): head
// types in the spirit of DuoAttention (Xiao et al. 2024, arXiv 2410.10819,
// mit-han-lab/duo-attention). Retrieval heads keep every entry; streaming
// heads keep the first `sinks` tokens and the most recent ones, `budget` in
// all (DuoAttention: 64 sinks + 256 recent). Which heads retrieve comes from
// a calibration file (heads=FILE, `kvbench heads` writes one): lines
// "layer kv_head score"; the `retrieval` share of the listed heads with the
// highest scores are retrieval heads. DuoAttention learns a gate per head by
// optimisation on synthetic passkey data; the file's score stands in for it.
// Without a file every head streams (StreamingLLM with sinks).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "policies/params.h"
#include "policies/parts/heads.h"
#include "policies/scorer.h"
#include "policies/scorers/sinks_scorer.h"

namespace kvbench {
namespace {

std::vector<std::shared_ptr<const Part>> duo_parts(const ComponentSpec& s, const PartEnv&) {
  return {make_heads_part(s.get("heads"), s.get_number("retrieval"))};
}

}  // namespace

ComponentInfo declare_duo() {
  // DuoAttention's streaming heads keep 64 sinks + 256 recent tokens.
  std::vector<ParamInfo> p = scorer_params(
      "stream",
      {{"sinks", ParamType::Int, "64", "attention-sink tokens a streaming head keeps", 0, 1e6},
       {"heads", ParamType::Text, "none",
        "calibration file of \"layer kv_head score\" lines (kvbench heads writes one); none: "
        "every head streams"},
       {"retrieval", ParamType::Number, "0.5",
        "share of the file's heads, highest scores first, that keep everything", 0, 1}});
  p[0].default_value = "320";
  ComponentInfo c = scorer_component<SinksScorer>(
      "duo",
      "DuoAttention head types: retrieval heads keep every entry, streaming heads keep "
      "`sinks` + the most recent tokens (`budget` in all); which heads from a calibration "
      "file",
      std::move(p));
  c.make_parts = duo_parts;
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "sinks=2";
  return c;
}

}  // namespace kvbench
