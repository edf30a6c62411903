#include "harness/history/show.h"

#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "harness/encode/markdown.h"
#include "harness/time_text.h"
#include "model/common/printable.h"

namespace kvbench::history {
namespace {

std::string fixed(double v, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string commit_day(const CommitInfo& c) {
  return utc_day(c.order_time) + (c.commit_time ? "" : " (run)");
}

// "1 run", "2 runs".
std::string count(int64_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// One line per spec that had several labels (one series), per label that
// named several specs (a series each) and per label run under both
// protocols (a series each), across the experiment's tasks.
std::string configuration_notes(const std::vector<const Series*>& series) {
  std::map<std::string, std::vector<std::string>> spec_labels;  // spec -> labels, latest first
  std::map<std::string, std::set<std::string>> label_specs, label_protocols;
  for (const Series* s : series) {
    for (const std::string& label : s->labels) label_protocols[label].insert(s->protocol);
    if (s->spec.empty()) continue;
    if (s->labels.size() > 1) spec_labels[s->spec] = s->labels;
    for (const std::string& label : s->labels) label_specs[label].insert(s->spec);
  }
  std::ostringstream o;
  for (const auto& [spec, labels] : spec_labels) {
    o << "- `" << markdown_cell(spec) << "` was labelled ";
    for (size_t i = 0; i < labels.size(); ++i)
      o << (i ? ", " : "") << "'" << markdown_cell(labels[i]) << "'";
    o << " (latest first): one configuration, one series\n";
  }
  for (const auto& [label, specs] : label_specs) {
    if (specs.size() < 2) continue;
    o << "- '" << markdown_cell(label) << "' named " << specs.size() << " specs (";
    size_t i = 0;
    for (const std::string& spec : specs)
      o << (i++ ? ", " : "") << "`" << markdown_cell(spec) << "`";
    o << "): different configurations, a series each\n";
  }
  for (const auto& [label, protocols] : label_protocols)
    if (protocols.size() > 1)
      o << "- '" << markdown_cell(label)
        << "' ran under both protocols (decoding.protocol query_aware and query_agnostic): "
           "different configurations, a series each ('"
        << markdown_cell(label) << " (query-agnostic)')\n";
  const std::string lines = o.str();
  return lines.empty()
             ? ""
             : "\nConfigurations are series by spec and protocol, not by label:\n\n" + lines;
}

}  // namespace

std::string show_markdown(const Trend& t, const std::string& db_path) {
  std::ostringstream o;
  o << "# Recall history: " << markdown_text(db_path, 512) << "\n\n"
    << count(t.runs, "run") << ", " << count(t.cells, "cell") << ", "
    << count(static_cast<int64_t>(t.commits.size()), "commit") << ".\n\n";
  if (t.commits.empty()) return o.str() + "No runs yet: kvbench history add RUN...\n";
  o << "| Commit | Date | Runs | Machine | Model sha256 |\n|---|---|---:|---|---|\n";
  for (const CommitInfo& c : t.commits) {
    std::string machines, models;
    for (const auto& m : c.machines) machines += (machines.empty() ? "" : "; ") + markdown_cell(m);
    for (const auto& m : c.models)
      models += (models.empty() ? "" : "; ") + markdown_cell(m.substr(0, 12));
    o << "| " << markdown_cell(commit_label(c)) << " | " << commit_day(c) << " | " << c.runs
      << " | " << machines << " | " << models << " |\n";
  }
  o << "\nDate: the commit's (from git); \"(run)\" when git did not know the commit and the run's "
       "start stands in.\n";

  // Per experiment: one column per commit that has any of its series.
  std::map<std::string, std::vector<const Series*>> by_experiment;
  for (const Series& s : t.series) by_experiment[s.experiment].push_back(&s);
  std::ostringstream regressions;
  int n_regressions = 0;
  for (const auto& [experiment, series] : by_experiment) {
    std::vector<bool> used(t.commits.size(), false);
    for (const Series* s : series)
      for (const TrendPoint& p : s->points) used[p.commit] = true;
    // A Model column when the experiment's series come from several models.
    std::set<std::string> models;
    for (const Series* s : series) models.insert(s->model);
    const bool by_model = models.size() > 1;
    o << "\n## " << markdown_cell(experiment) << "\n\n"
      << (by_model ? "| Model " : "") << "| Configuration | Task |";
    std::string rule = by_model ? "|---|---|---|" : "|---|---|";
    for (size_t i = 0; i < t.commits.size(); ++i)
      if (used[i]) {
        o << " " << markdown_cell(commit_label(t.commits[i])) << " |";
        rule += "---:|";
      }
    o << "\n" << rule << "\n";
    for (const Series* s : series) {
      if (by_model) o << "| " << markdown_cell(s->model) << " ";
      o << "| " << markdown_cell(s->configuration) << " | " << markdown_cell(s->task) << " |";
      size_t next = 0;
      for (size_t i = 0; i < t.commits.size(); ++i) {
        if (!used[i]) continue;
        if (next < s->points.size() && s->points[next].commit == i) {
          const TrendPoint& p = s->points[next++];
          o << " " << stats::format_estimate(p.score.mean, p.score.ci) << " n=" << p.score.n;
          if (p.regressed) {
            o << " ▼ p=" << fixed(p.p_drop, "%.3g");
            const TrendPoint& prev = s->points[next - 2];
            regressions << "- " << markdown_cell(experiment) << " / "
                        << (by_model ? markdown_cell(s->model) + " / " : "")
                        << markdown_cell(s->configuration) << " / " << markdown_cell(s->task)
                        << " at " << markdown_cell(commit_label(t.commits[i])) << " (vs "
                        << markdown_cell(commit_label(t.commits[prev.commit])) << "): mean score "
                        << fixed(prev.score.mean, "%.3f") << " -> " << fixed(p.score.mean, "%.3f")
                        << ", a drop of " << fixed(p.drop, "%.3f") << " over " << p.paired
                        << " paired instances, one-sided p = " << fixed(p.p_drop, "%.4g") << "\n";
            ++n_regressions;
          }
          o << " |";
        } else {
          o << " – |";
        }
      }
      o << "\n";
    }
    o << configuration_notes(series);
  }
  o << "\nScores: mean with its 95% interval (Wilson for pass/fail, bootstrap otherwise, at least "
       "Wilson's for scores in [0, 1]: bootstrap+Wilson) over n instances. ▼ marks a regression "
       "point: paired by "
       "instance with the previous commit, the "
       "one-sided test of `kvbench compare` calls the drop significant (p < 0.05) and it is "
       "larger than the tolerance ("
    << fixed(t.tolerance, "%.3f") << ").\n\n";
  if (n_regressions)
    o << "Regression points (" << n_regressions << "):\n\n" << regressions.str();
  else
    o << "No regression point between consecutive commits.\n";
  return o.str();
}

}  // namespace kvbench::history
