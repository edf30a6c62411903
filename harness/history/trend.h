// Scores over commits, read back from the history: what `history show` prints
// and `history plot` draws.
//
// A series is one (experiment, model, configuration, task, protocol); it has a point
// per commit that has cells of it. A point pools the commit's runs by
// instance: per instance id the latest-started run's cell counts (a rerun
// replaces an earlier one, shards of one run add up), so each instance
// counts once. Its score is the mean with its 95% interval and n
// (stats::estimate_mean: Wilson or bootstrap).
//
// A configuration is its spec (canonical form), not its label: a label
// renamed over the same spec stays one series (shown by its latest label),
// a label kept over another spec starts another (both then shown as
// "label [spec]"). Cells of a version-1 file carry no spec: keyed by label.
// The same configuration run under the other decoding.protocol is another
// series (its numbers differ by the protocol, not by the code), shown as
// "label (query-agnostic)"; a run stored before schema version 5 counts as
// query-aware.
//
// Commits are ordered by their date from git (add.h), falling back to the
// earliest start time of their runs when git did not know the commit, ties
// by commit id.
//
// The regression point: a point whose instances, paired with the previous
// point of the same series (same instance ids, the rule of compare_runs),
// show a drop the one-sided paired test calls significant
// (stats::paired_p, p < 0.05) that is larger than the tolerance: the
// commit where compare BASE=previous NEW=this would say REGRESSED.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/history/sqlite_db.h"
#include "harness/report/stats.h"

namespace kvbench::history {

inline constexpr const char* kQueryAware = "query_aware";
inline constexpr const char* kQueryAgnostic = "query_agnostic";

// Bounds on what is read from a file (which may be hostile).
inline constexpr int64_t kMaxRuns = 100'000;
inline constexpr int64_t kMaxCells = 2'000'000;

struct CommitInfo {
  std::string commit;  // as meta.json gave it
  // Runs built from that commit with uncommitted changes: a point of their
  // own, after the clean commit's (their scores are not the commit's).
  bool dirty = false;
  std::optional<int64_t> commit_time;  // unix seconds, from git
  int64_t order_time = 0;              // commit_time, else the earliest run start
  int runs = 0;
  std::vector<std::string> machines, models;  // distinct, sorted
};

struct TrendPoint {
  size_t commit = 0;  // index into Trend::commits
  stats::Estimate score;
  // Against the previous point of the series (none for the first).
  int64_t paired = 0;   // instances both points have
  double p_drop = NAN;  // one-sided paired p; NaN without a previous point
  double drop = NAN;    // mean over the paired instances, previous - this
  bool regressed = false;
};

struct Series {
  // configuration: the label the latest run used ("label [spec]" when
  // another series of the same experiment, task, model and protocol shows
  // it too; " (query-agnostic)" appended for that protocol).
  std::string experiment, configuration, task;
  // The model: its label in a run folder of several models, else the first
  // 12 hex digits of its sha256 (runs of different models never share a
  // series: a model change is not a regression).
  std::string model;
  std::string protocol;             // kQueryAware or kQueryAgnostic
  std::string spec;                 // canonical; "" for cells without one
  std::vector<std::string> labels;  // every label the series had, the latest first
  std::vector<TrendPoint> points;   // in commit order
};

struct Trend {
  std::vector<CommitInfo> commits;  // in history order
  std::vector<Series> series;       // sorted by experiment, task, configuration, model
  int64_t runs = 0, cells = 0;
  double tolerance = 0.0;
};

// Reads the whole history (one read transaction) and computes every point.
// `db`: opened by open_history_read or a HistoryWriter (its schema checked);
// a file of an older version is read as it is.
// experiment: only runs of that experiment ("" for all). InputError naming
// the file for a row that breaks the layout (a foreign or damaged file) and
// for more than kMaxRuns runs or kMaxCells cells.
Trend load_trend(const Db& db, double tolerance, const std::string& experiment = "");

// The first 7 characters of a commit id, escaped for any text sink.
std::string short_commit(const std::string& commit);
// A history point's label: short_commit, "+dirty" for runs built with
// uncommitted changes.
std::string commit_label(const CommitInfo& c);

}  // namespace kvbench::history
