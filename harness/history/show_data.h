// `kvbench history show --csv | --json`: the trend `history show` prints as
// markdown, as data for scripts and pandas.
//
// CSV, one row per point (a series at a commit; tidy, long form), with the
// header
//   experiment,model,configuration,task,spec,protocol,commit,dirty,date,
//   date_from,mean,ci_lo,ci_hi,n,paired,p_drop,drop,regressed
// date: the commit's day (UTC), date_from "git" or "run" (git did not know
// the commit: the run's start stands in); paired, p_drop and drop against
// the series' previous point (empty for the first); numbers plain, empty
// for none; dirty and regressed "true" or "false". Every string from the
// database is one quoted field that no spreadsheet evaluates
// (harness/encode/csv.h).
//
// JSON, one document (schema "kvbench-history/1"): {schema, db, tolerance,
// runs, cells, commits: [{commit, dirty, date, date_from, runs, machines,
// models}], series: [{experiment, model, configuration, labels, spec,
// protocol, task, points: [{commit: index into commits, mean, ci: [lo, hi],
// n, paired, p_drop, drop, regressed}]}]}; null where the CSV is empty.
// ASCII only (every other character a \u escape), so no string from the
// database can move a terminal.
#pragma once

#include <string>

#include "harness/history/trend.h"

namespace kvbench::history {

inline constexpr const char* kHistoryJsonSchema = "kvbench-history/1";

std::string show_csv(const Trend& trend);
std::string show_json(const Trend& trend, const std::string& db_path);

}  // namespace kvbench::history
