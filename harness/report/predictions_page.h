// Where each cell's answer can be read: predictions.html lists every cell
// (its instance id, task, length, depth, the model's output, the accepted
// answers and the score) under its configuration, each entry with the anchor
// cell_anchor(id); report.html's per-instance grid links every score to it.
// Everything the cells hold is escaped (html_escape): model output and labels
// are untrusted text.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/table.h"

namespace kvbench {

// The anchor of configuration `row` (an index into rows) in predictions.html.
std::string config_anchor(size_t row);

// The whole predictions.html page.
std::string predictions_html(const std::vector<nlohmann::json>& cells,
                             const std::vector<TableRow>& rows, const std::string& experiment);

// report.html's per-instance grid: one row per instance (by task, length,
// depth, id), one column per configuration, each score coloured and linked to
// its cell's entry in predictions.html; the last row has each column's mean
// score with its 95% interval. `page`: the predictions page the links go to
// (a file name kvbench chose, not escaped).
std::string instance_grid_html(const std::vector<nlohmann::json>& cells,
                               const std::vector<TableRow>& rows,
                               const std::string& page = "predictions.html");

}  // namespace kvbench
