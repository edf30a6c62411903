#include "harness/history/trend.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "harness/history/schema.h"
#include "harness/time_text.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench::history {
namespace {

struct RunRow {
  std::string experiment, commit, model, machine;
  std::string protocol;   // Series::protocol
  bool dirty = false;     // built with uncommitted changes: a point of its own
  std::string model_key;  // Series::model
  std::optional<int64_t> commit_time;
  int64_t started = 0;
};

// One instance's cell at one commit: the latest-started run wins.
struct InstanceScore {
  int64_t started = 0;
  std::string run_id;
  double score = 0.0;
};

// A point of the history: a commit, and whether its runs were built with
// uncommitted changes.
using PointKey = std::pair<std::string, bool>;

// experiment, task, configuration, model, protocol. The configuration is
// its spec (canonical form); a cell without one (a version-1 file) is keyed
// by its label, prefixed so that no spec can equal it.
using SeriesKey = std::tuple<std::string, std::string, std::string, std::string, std::string>;
constexpr char kLabelKey[] = "\x01label:";

[[noreturn]] void bad(const Db& db, const std::string& what) {
  throw InputError(escaped_text(db.path(), 512) + ": " + what);
}

// The runs, with the columns a file of `version` lacks read as NULL: a reader
// never migrates (it writes nothing), so an older file is read as it is
// (check_schema() has checked it is exactly that version's layout).
const char* runs_query(int version) {
  if (version >= 5)
    return "SELECT run_id, experiment, git_commit, commit_time, started_utc, model_sha256, "
           "machine, model_label, git_dirty, protocol FROM runs ORDER BY run_id";
  if (version == 4)
    return "SELECT run_id, experiment, git_commit, commit_time, started_utc, model_sha256, "
           "machine, model_label, git_dirty, NULL FROM runs ORDER BY run_id";
  if (version == 3)
    return "SELECT run_id, experiment, git_commit, commit_time, started_utc, model_sha256, "
           "machine, model_label, NULL, NULL FROM runs ORDER BY run_id";
  return "SELECT run_id, experiment, git_commit, commit_time, started_utc, model_sha256, "
         "machine, NULL, NULL, NULL FROM runs ORDER BY run_id";
}

// The cells, with the spec NULL in a version-1 file.
const char* cells_query(int version) {
  if (version >= 2)
    return "SELECT run_id, configuration, task, instance, score, spec FROM cells ORDER BY run_id, "
           "cell_id";
  return "SELECT run_id, configuration, task, instance, score, NULL FROM cells ORDER BY run_id, "
         "cell_id";
}

double mean(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return v.empty() ? NAN : s / static_cast<double>(v.size());
}

}  // namespace

std::string short_commit(const std::string& commit) {
  return escaped_text(commit.substr(0, 7), 64);
}

std::string commit_label(const CommitInfo& c) {
  return short_commit(c.commit) + (c.dirty ? "+dirty" : "");
}

Trend load_trend(const Db& db, double tolerance, const std::string& experiment) {
  Trend t;
  t.tolerance = tolerance;
  Transaction read(db, Transaction::Kind::Read);
  const int version = schema_version(db);
  if (version == 0) return t;  // no tables yet

  std::map<std::string, RunRow> runs;  // run_id -> run
  {
    Stmt s(db, runs_query(version), "runs");
    while (s.step()) {
      if (static_cast<int64_t>(runs.size()) >= kMaxRuns)
        bad(db, "more than " + std::to_string(kMaxRuns) + " runs");
      RunRow r;
      const std::string id = s.text(0);
      r.experiment = s.text(1);
      r.commit = s.text(2);
      r.commit_time = s.optional_integer(3);
      // Checked before any use: it orders commits and becomes a date.
      if (r.commit_time && !time_in_range(*r.commit_time))
        bad(db, "runs.commit_time: " + std::to_string(*r.commit_time) +
                    " is not unix seconds from 1970 to 9999 (not a kvbench history, or damaged)");
      const std::string started = s.text(4);
      const auto when = parse_utc(started);
      if (!when)
        bad(db, "runs.started_utc: '" + escaped_text(started, 64) +
                    "' is not YYYY-MM-DDTHH:MM:SSZ (not a kvbench history, or damaged)");
      r.started = *when;
      r.model = s.text(5);
      r.machine = s.text(6);
      const std::optional<std::string> label = s.optional_text(7);
      r.model_key = label ? *label : r.model.substr(0, 12);
      r.dirty = s.optional_integer(8).value_or(0) != 0;
      // NULL: a run added before version 5, when query-aware was the only
      // protocol most histories held (add.h).
      r.protocol = s.optional_text(9).value_or(kQueryAware);
      if (r.protocol != kQueryAware && r.protocol != kQueryAgnostic)
        bad(db, "runs.protocol: '" + escaped_text(r.protocol, 64) +
                    "' is not query_aware or query_agnostic (not a kvbench history, or damaged)");
      if (!experiment.empty() && r.experiment != experiment) continue;
      runs.emplace(id, std::move(r));
    }
  }

  // series -> point (commit, dirty) -> instance -> score
  std::map<SeriesKey, std::map<PointKey, std::map<std::string, InstanceScore>>> data;
  // series -> label -> the latest start of a run that used it
  std::map<SeriesKey, std::map<std::string, int64_t>> labels;
  {
    Stmt s(db, cells_query(version), "cells");
    int64_t rows = 0;
    while (s.step()) {
      if (++rows > kMaxCells) bad(db, "more than " + std::to_string(kMaxCells) + " cells");
      const std::string run_id = s.text(0);
      const auto run = runs.find(run_id);
      if (run == runs.end()) continue;  // another experiment (or a cell without its run)
      const double score = s.real(4);
      if (!(score >= 0.0 && score <= 1.0))
        bad(db, "cells.score: " + std::to_string(score) +
                    " is out of [0, 1] (not a kvbench history, or damaged)");
      const RunRow& r = run->second;
      const std::string label = s.text(1);
      const std::optional<std::string> spec = s.optional_text(5);
      const SeriesKey key{r.experiment, s.text(2),
                          spec && !spec->empty() ? *spec : kLabelKey + label, r.model_key,
                          r.protocol};
      int64_t& last = labels[key].try_emplace(label, r.started).first->second;
      last = std::max(last, r.started);
      InstanceScore& slot = data[key][{r.commit, r.dirty}][s.text(3)];
      if (slot.run_id.empty() || std::tie(r.started, run_id) > std::tie(slot.started, slot.run_id))
        slot = {r.started, run_id, score};
      ++t.cells;
    }
  }
  read.commit();

  // Commits in history order.
  std::map<PointKey, CommitInfo> by_commit;
  for (const auto& [id, r] : runs) {
    auto [it, fresh] = by_commit.try_emplace(PointKey{r.commit, r.dirty});
    CommitInfo& c = it->second;
    if (fresh) {
      c.commit = r.commit;
      c.dirty = r.dirty;
      c.order_time = r.started;
    }
    if (r.commit_time) c.commit_time = r.commit_time;
    c.order_time = std::min(c.order_time, r.started);
    ++c.runs;
    c.machines.push_back(r.machine);
    c.models.push_back(r.model);
  }
  for (auto& [id, c] : by_commit) {
    if (c.commit_time) c.order_time = *c.commit_time;
    for (auto* v : {&c.machines, &c.models}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    t.commits.push_back(c);
  }
  // A dirty point right after its clean commit (same commit time).
  std::sort(t.commits.begin(), t.commits.end(), [](const CommitInfo& a, const CommitInfo& b) {
    return std::tie(a.order_time, a.commit, a.dirty) < std::tie(b.order_time, b.commit, b.dirty);
  });
  std::map<PointKey, size_t> commit_index;
  for (size_t i = 0; i < t.commits.size(); ++i)
    commit_index[{t.commits[i].commit, t.commits[i].dirty}] = i;
  t.runs = static_cast<int64_t>(runs.size());

  for (const auto& [key, commits] : data) {
    Series series{
        std::get<0>(key), "", std::get<1>(key), std::get<3>(key), std::get<4>(key), "", {}, {}};
    const std::string& config = std::get<2>(key);
    if (config.rfind(kLabelKey, 0) != 0) series.spec = config;
    // Its labels, the latest used first: the series is shown by that one.
    std::vector<std::pair<int64_t, std::string>> used;
    for (const auto& [label, started] : labels.at(key)) used.push_back({started, label});
    std::sort(used.begin(), used.end(), std::greater<>());
    for (const auto& [started, label] : used) series.labels.push_back(label);
    series.configuration = series.labels.front();
    // The commits of this series in history order.
    std::vector<std::pair<size_t, const std::map<std::string, InstanceScore>*>> ordered;
    for (const auto& [commit, instances] : commits)
      ordered.push_back({commit_index.at(commit), &instances});
    std::sort(ordered.begin(), ordered.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    const std::map<std::string, InstanceScore>* previous = nullptr;
    for (const auto& [index, instances] : ordered) {
      TrendPoint p;
      p.commit = index;
      std::vector<double> scores;  // in instance-id order
      for (const auto& [instance, cell] : *instances) scores.push_back(cell.score);
      p.score = stats::estimate_mean(scores);
      if (previous) {
        std::vector<double> before, after;  // [paired] in instance-id order
        for (const auto& [instance, cell] : *instances)
          if (const auto it = previous->find(instance); it != previous->end()) {
            before.push_back(it->second.score);
            after.push_back(cell.score);
          }
        p.paired = static_cast<int64_t>(before.size());
        if (p.paired) {
          std::vector<double> both = before;
          both.insert(both.end(), after.begin(), after.end());
          p.p_drop = stats::paired_p(stats::score_kind(both), before, after);
          p.drop = mean(before) - mean(after);
          p.regressed = stats::significant(p.p_drop) && p.drop > tolerance + 1e-12;
        }
      }
      series.points.push_back(p);
      previous = instances;
    }
    t.series.push_back(std::move(series));
  }
  // A label shown by two series of one experiment, task, model and protocol
  // (it named two specs): each shown with its spec.
  std::map<std::tuple<std::string, std::string, std::string, std::string, std::string>, int> shown;
  for (const Series& s : t.series)
    ++shown[{s.experiment, s.task, s.model, s.protocol, s.configuration}];
  for (Series& s : t.series)
    if (shown[{s.experiment, s.task, s.model, s.protocol, s.configuration}] > 1 && !s.spec.empty())
      s.configuration += " [" + s.spec + "]";
  // A query-agnostic series says so wherever it is shown (the default
  // protocol's keep their labels, as runs of the default arithmetic keep
  // the experiment's name).
  for (Series& s : t.series)
    if (s.protocol == kQueryAgnostic) s.configuration += " (query-agnostic)";
  std::sort(t.series.begin(), t.series.end(), [](const Series& a, const Series& b) {
    return std::tie(a.experiment, a.task, a.configuration, a.model, a.protocol) <
           std::tie(b.experiment, b.task, b.configuration, b.model, b.protocol);
  });
  return t;
}

}  // namespace kvbench::history
