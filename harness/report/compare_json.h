// `kvbench compare --json`: the comparison of compare_runs as one JSON
// document, for scripts (the markdown report stays the default). The
// schema ("schema": "kvbench-compare/1"; docs/HARNESS.md, "The regression
// gate", spells out every field):
//
//   base, new          {dir, arithmetic, decoding} of each run folder
//   tolerance, metric_tolerance
//   notes              the report's "Note:" lines (another arithmetic or
//                      decoding), as sentences
//   configurations     base configurations not matched by label and spec:
//                      {model, label, spec, match: renamed | spec changed |
//                      missing, new_label, new_spec}
//   models_in_one_run  {model, run: base | new}, not compared
//   groups             one per table row: {model, configuration,
//                      new_configuration, spec, task, n, test, base, new
//                      ({mean, ci: [lo, hi]}), delta, p,
//                      min_detectable_drop, min_detectable_flips,
//                      undetectable, missing, status, regressed, metrics:
//                      [{metric, n, base_mean, new_mean, delta, p, changed,
//                      regressed, status}]}
//   changed_cells      {model, cell, instance, configuration, base, new, delta}
//   counts             {base_cells, new_cells, missing_from_new, only_in_new,
//                      changed_cells}
//   result, exit_code  "regression" (1) or "no significant regression" (0)
//
// A number the report shows as "–" (no data: NaN) is null, as are the model
// when each run has one, a spec the cells do not give and a label with no
// counterpart.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "harness/report/compare.h"

namespace kvbench {

inline constexpr const char* kCompareJsonSchema = "kvbench-compare/1";

nlohmann::json compare_json(const CompareResult& r);

// The document as text for a terminal or a pipe: ASCII only (every other
// character a \u escape, control characters included, invalid UTF-8
// replaced by U+FFFD), so no string from a run folder can move a terminal;
// a newline at the end.
std::string compare_json_text(const CompareResult& r);

}  // namespace kvbench
