// The report's "Score per task" table: per configuration and task, the mean
// score with its 95% interval and n (Wilson or bootstrap by the cells'
// scores, as the main table).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvbench {

// cells: a model's cells (report.cpp's sections). Markdown, one row per
// configuration in the table's order (policy.index), a column per task; a
// task the run has at several context lengths gets a column per length
// ("niah_single at 8000"), each with its own interval.
std::string per_task_markdown(const std::vector<nlohmann::json>& cells);

}  // namespace kvbench
