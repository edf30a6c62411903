// `kvbench history show`: the trend as markdown. A table of the commits
// (date, runs, machine, model), then per experiment one row per
// configuration x task and one column per commit in history order, each
// cell the score with its 95% interval and n, a regression point marked
// "▼ p=..." (trend.h says when); then every regression point spelled out.
// Every string from the database is escaped for a terminal and for a
// markdown table cell.
#pragma once

#include <string>

#include "harness/history/trend.h"

namespace kvbench::history {

std::string show_markdown(const Trend& trend, const std::string& db_path);

}  // namespace kvbench::history
