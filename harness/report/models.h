// A run folder's cells by model. A run of one model (every run before
// experiments took "models") renders as it always did; a run of several gets
// each model its own table, heatmaps and per-instance grid, and one
// score-vs-memory figure with every model (harness/report/report.h).
//
// A cell names its model (cell "model": {label, file, sha256}); a cell without
// one (written before cells recorded it) belongs to the run's one model,
// labelled from config.json's "model" the way the runner labels it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvbench {

struct ModelSection {
  std::string label;  // untrusted text: escape it for its sink
  std::vector<nlohmann::json> cells;
};

// The label of a cell's model; `fallback` for a cell that names none.
std::string cell_model_label(const nlohmann::json& cell, const std::string& fallback);

// The label of the model of the cells that name none: the stem of
// config.json's "model" ("" when it has none).
std::string default_model_label(const nlohmann::json& config);

// The cells by model label, in the order of config.json's "models", then any
// other label by first appearance (cells stay in their order). At least one
// section (empty when there are no cells).
std::vector<ModelSection> split_by_model(const std::vector<nlohmann::json>& cells,
                                         const nlohmann::json& config);

}  // namespace kvbench
