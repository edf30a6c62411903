#include "tests/support/scorer_priorities.h"

#include <numeric>

#include "policies/policy_spec.h"
#include "policies/registry.h"

namespace kvbench::test {

std::vector<float> scorer_priorities(const std::string& spec, ScoreContext& cx,
                                     const std::vector<int32_t>& pos, int32_t keep) {
  const int32_t n = static_cast<int32_t>(pos.size());
  std::vector<int32_t> src(n);
  std::iota(src.begin(), src.end(), 0);
  ScoreInput in;
  in.n = n;
  in.src = src.data();
  in.pos = pos.data();
  in.keep = keep;
  in.context = &cx;
  const PolicySpec s = parse_policy_spec(spec);
  std::vector<float> out(n);
  s.scorer.info().make_scorer(s.scorer)->priorities(in, out.data());
  return out;
}

}  // namespace kvbench::test
