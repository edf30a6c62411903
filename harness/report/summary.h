// The report's opening sentences, generated from the cells: what keeps most
// at which memory (the Pareto front of score against KV memory), which
// configurations the paired test cannot tell from the full cache, which fall
// significantly below it, which collapse, and how small a drop the run could
// have detected. Nothing is canned: every name and number comes from the
// data, and a difference is called one only when the paired test
// (stats::paired_p: McNemar or bootstrap+sign) says p < 0.05.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/table.h"

namespace kvbench {

// Plain-text sentences (labels as the cells hold them: the caller escapes
// them for its output). `rows` is build_table(cells).
std::vector<std::string> summary_sentences(const std::vector<nlohmann::json>& cells,
                                           const std::vector<TableRow>& rows);

}  // namespace kvbench
