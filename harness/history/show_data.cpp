#include "harness/history/show_data.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/encode/csv.h"
#include "harness/encode/json_number.h"
#include "harness/time_text.h"

namespace kvbench::history {
namespace {

using json = nlohmann::json;

// A number as the CSV gives it, unquoted (our own text: a leading '-' is a
// sign, not a formula); 10 significant digits; "" for none.
std::string num(double v) {
  if (std::isnan(v)) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

const char* date_from(const CommitInfo& c) { return c.commit_time ? "git" : "run"; }

}  // namespace

std::string show_csv(const Trend& t) {
  std::ostringstream o;
  o << "experiment,model,configuration,task,spec,protocol,commit,dirty,date,date_from,mean,ci_lo,"
       "ci_hi,n,paired,p_drop,drop,regressed\n";
  for (const Series& s : t.series)
    for (size_t i = 0; i < s.points.size(); ++i) {  // i = 0: no previous point to pair with
      const TrendPoint& p = s.points[i];
      const CommitInfo& c = t.commits[p.commit];
      o << csv_field(s.experiment) << "," << csv_field(s.model) << "," << csv_field(s.configuration)
        << "," << csv_field(s.task) << "," << csv_field(s.spec) << "," << csv_field(s.protocol)
        << "," << csv_field(c.commit) << "," << (c.dirty ? "true" : "false") << ","
        << utc_day(c.order_time) << "," << date_from(c) << "," << num(p.score.mean) << ","
        << num(p.score.ci.lo) << "," << num(p.score.ci.hi) << "," << p.score.n << ","
        << (i > 0 ? std::to_string(p.paired) : "") << "," << num(p.p_drop) << "," << num(p.drop)
        << "," << (p.regressed ? "true" : "false") << "\n";
    }
  return o.str();
}

std::string show_json(const Trend& t, const std::string& db_path) {
  json commits = json::array(), series = json::array();
  for (const CommitInfo& c : t.commits)
    commits.push_back({{"commit", c.commit},
                       {"dirty", c.dirty},
                       {"date", utc_day(c.order_time)},
                       {"date_from", date_from(c)},
                       {"runs", c.runs},
                       {"machines", c.machines},
                       {"models", c.models}});
  for (const Series& s : t.series) {
    json points = json::array();
    for (size_t i = 0; i < s.points.size(); ++i) {
      const TrendPoint& p = s.points[i];
      points.push_back(
          {{"commit", p.commit},
           {"mean", json_number(p.score.mean)},
           {"ci", json::array({json_number(p.score.ci.lo), json_number(p.score.ci.hi)})},
           {"n", p.score.n},
           {"paired", i > 0 ? json(p.paired) : json(nullptr)},
           {"p_drop", json_number(p.p_drop)},
           {"drop", json_number(p.drop)},
           {"regressed", p.regressed}});
    }
    series.push_back({{"experiment", s.experiment},
                      {"model", s.model},
                      {"configuration", s.configuration},
                      {"labels", s.labels},
                      {"spec", s.spec.empty() ? json(nullptr) : json(s.spec)},
                      {"protocol", s.protocol},
                      {"task", s.task},
                      {"points", points}});
  }
  const json doc = {{"schema", kHistoryJsonSchema},
                    {"db", db_path},
                    {"tolerance", t.tolerance},
                    {"runs", t.runs},
                    {"cells", t.cells},
                    {"commits", commits},
                    {"series", series}};
  return doc.dump(2, ' ', true, json::error_handler_t::replace) + "\n";
}

}  // namespace kvbench::history
