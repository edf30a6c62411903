// A finished run's cells in one file, cells.jsonl.zst: a header line
// {"format": "kvbench packed cells 1", "cells": N}, then one cell's JSON per
// line, sorted by id, zstd-compressed (about 20x smaller than cells/ with
// its one file per cell). The form committed results take: `kvbench pack`
// writes it, and every reader of a run folder (report, compare, merge,
// history) reads it as it reads cells/. Folders come from others: the
// decompressed text, each line and the line count are bounded before
// anything is kept, and each cell is checked as a cell file is.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvbench {

inline constexpr const char* kPackedCells = "cells.jsonl.zst";

// The cells of `path` (a cells.jsonl.zst), unchecked beyond JSON syntax and
// the bounds above; InputError "<path>: line N: ..." otherwise.
std::vector<nlohmann::json> read_packed_cells(const std::string& path);

// `cells` (sorted by id) as cells.jsonl.zst's bytes.
std::string pack_cells(const std::vector<nlohmann::json>& cells);

}  // namespace kvbench
