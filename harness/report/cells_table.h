// cells.csv and cells.jsonl: the run's cells as tidy data, one row per cell
// (instance x configuration x model), for pandas, R or a spreadsheet. The
// columns are fixed whatever the run (one model or several, needles or
// none, perplexity or generation): a value a cell does not have is an empty
// field in the CSV and null in the JSONL, never a sentinel. docs/HARNESS.md
// ("cells.csv") documents each column; the CSV's strings go through
// csv_field (harness/encode/csv.h), the JSONL's are plain JSON strings.
//
// Rows: the models in the report's order (harness/report/models.h), each
// model's cells sorted by cell id as the run folder lists them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/models.h"
#include "harness/run/run_folder.h"

namespace kvbench {

// The columns, in order: the CSV's header and the keys of every JSONL line.
const std::vector<std::string>& cell_columns();

// One object per cell, its keys cell_columns() in that order; values are
// strings, integers, numbers, booleans or null.
std::vector<nlohmann::ordered_json> cell_rows(const std::vector<ModelSection>& models);

std::string cells_csv(const std::vector<nlohmann::ordered_json>& rows);
std::string cells_jsonl(const std::vector<nlohmann::ordered_json>& rows);

// Writes <run>/cells.csv and <run>/cells.jsonl, each atomically.
void write_cell_tables(const RunFolder& run, const std::vector<ModelSection>& models);

}  // namespace kvbench
