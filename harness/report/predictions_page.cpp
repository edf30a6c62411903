#include "harness/report/predictions_page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "harness/encode/html.h"
#include "harness/report/html.h"
#include "harness/report/stats.h"
#include "harness/run/run_folder.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

std::string number(double v, const char* f) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string depth_text(const json& inst) {
  if (!inst.contains("depth") || !inst["depth"].is_number()) return "–";
  return number(inst["depth"].get<double>() * 100, "%.0f%%");
}

std::string length_text(const json& inst) {
  return inst.contains("length") ? std::to_string(inst["length"].get<int64_t>()) : "–";
}

// The answers a cell accepts, each escaped and shown as code.
std::string answers_html(const json& cell) {
  if (!cell.contains("answers")) return "–";
  std::string out;
  for (const auto& a : cell["answers"])
    out += (out.empty() ? "" : " ") + std::string("<code>") +
           html_escape(a.is_string() ? a.get<std::string>() : dump_json(a, -1)) + "</code>";
  return out.empty() ? "–" : out;
}

// A score's cell colour: red at 0, yellow at 0.5, green at 1 (the heatmaps'
// palette, lightened so the text stays readable).
std::string score_colour(double s) {
  const double t = std::clamp(s, 0.0, 1.0);
  const double r = t < 0.5 ? 0.96 : 0.96 - (t - 0.5) * 2 * (0.96 - 0.65);
  const double g = t < 0.5 ? 0.65 + t * 2 * (0.95 - 0.65) : 0.95 - (t - 0.5) * 2 * (0.95 - 0.85);
  const double b = 0.6;
  char buf[32];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(r * 255),
                static_cast<int>(g * 255), static_cast<int>(b * 255));
  return buf;
}

// The row index of each label (the table's order; the first row wins).
std::map<std::string, size_t> row_of(const std::vector<TableRow>& rows) {
  std::map<std::string, size_t> out;
  for (size_t i = 0; i < rows.size(); ++i) out.emplace(rows[i].label, i);
  return out;
}

// Instances in reading order: task, length, depth, id.
using InstanceKey = std::tuple<std::string, int64_t, double, std::string>;
InstanceKey instance_key(const json& inst) {
  return {inst["task"].get<std::string>(), inst.value("length", int64_t{0}),
          inst.contains("depth") && inst["depth"].is_number() ? inst["depth"].get<double>() : -1.0,
          inst["id"].get<std::string>()};
}

const char* kStyle =
    "body{font-family:sans-serif;margin:1.5em;max-width:1400px}"
    "table{border-collapse:collapse;font-size:0.85em}"
    "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;text-align:left}"
    "td.num{text-align:right}code{white-space:pre-wrap;word-break:break-all}"
    "tr:target{outline:3px solid #2b83ba}";

}  // namespace

std::string config_anchor(size_t row) { return "config-" + std::to_string(row); }

std::string predictions_html(const std::vector<json>& cells, const std::vector<TableRow>& rows,
                             const std::string& experiment) {
  const auto rows_by_label = row_of(rows);
  std::vector<std::vector<const json*>> by_row(rows.size());
  for (const auto& c : cells) {
    const auto it = rows_by_label.find(c["policy"]["label"].get<std::string>());
    if (it != rows_by_label.end()) by_row[it->second].push_back(&c);
  }
  std::ostringstream o;
  o << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>kvbench predictions: "
    << html_escape(experiment) << "</title>\n<style>" << kStyle << "</style></head><body>\n"
    << "<h1>Predictions: " << html_escape(experiment) << "</h1>\n"
    << "<p><a href=\"report.html\">back to the report</a>. Every cell: the instance (its id "
       "regenerates the prompt: <code>kvbench dataset generate</code>), the model's output as "
       "generated, the answers the grader accepts and the score.</p>\n<ul>\n";
  for (size_t i = 0; i < rows.size(); ++i)
    o << "<li><a href=\"#" << config_anchor(i) << "\">" << html_escape(rows[i].label) << "</a> ("
      << by_row[i].size() << " cells)</li>\n";
  o << "</ul>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    auto members = by_row[i];
    std::stable_sort(members.begin(), members.end(), [](const json* a, const json* b) {
      return instance_key((*a)["instance"]) < instance_key((*b)["instance"]);
    });
    o << "<h2 id=\"" << config_anchor(i) << "\">" << html_escape(rows[i].label) << "</h2>\n"
      << "<p><code>" << html_escape(rows[i].spec) << "</code>; score "
      << html_escape(stats::format_estimate(rows[i].score, rows[i].score_ci)) << " ("
      << rows[i].score_method() << ", n=" << rows[i].cells << ")</p>\n"
      << "<table>\n<tr><th></th><th>Instance</th><th>Task</th><th>Length</th><th>Depth</th>"
         "<th>Score</th><th>Prediction</th><th>Expected</th></tr>\n";
    for (const json* c : members) {
      const json& inst = (*c)["instance"];
      const std::string id = (*c)["id"].get<std::string>();
      const double score = (*c)["score"].get<double>();
      // The row links to itself (a permalink); the cell's file name, long
      // (instance and policy spec), is its tooltip rather than a column.
      o << "<tr id=\"" << html_escape(cell_anchor(id)) << "\"><td><a href=\"#"
        << html_escape(cell_anchor(id)) << "\" title=\"cells/" << html_escape(id)
        << ".json\">&para;</a></td><td>" << html_escape(inst["id"].get<std::string>())
        << "</td><td>" << html_escape(inst["task"].get<std::string>()) << "</td><td class=\"num\">"
        << length_text(inst) << "</td><td class=\"num\">" << depth_text(inst)
        << "</td><td class=\"num\" style=\"background:" << score_colour(score) << "\">"
        << number(score, "%.3f") << "</td><td><code>"
        << html_escape((*c).value("prediction", std::string())) << "</code></td><td>"
        << answers_html(*c) << "</td></tr>\n";
    }
    o << "</table>\n";
  }
  o << "</body></html>\n";
  return o.str();
}

std::string instance_grid_html(const std::vector<json>& cells, const std::vector<TableRow>& rows,
                               const std::string& page) {
  const auto rows_by_label = row_of(rows);
  // instance -> column -> cell
  std::map<InstanceKey, std::map<size_t, const json*>> grid;
  std::vector<std::vector<double>> column_scores(rows.size());
  for (const auto& c : cells) {
    const auto it = rows_by_label.find(c["policy"]["label"].get<std::string>());
    if (it == rows_by_label.end()) continue;
    grid[instance_key(c["instance"])][it->second] = &c;
    column_scores[it->second].push_back(c["score"].get<double>());
  }
  std::ostringstream o;
  o << "<table class=\"grid\">\n<tr><th>Task</th><th>Length</th><th>Depth</th><th>Instance</th>";
  for (size_t i = 0; i < rows.size(); ++i)
    o << "<th><a href=\"" << page << "#" << config_anchor(i) << "\">" << html_escape(rows[i].label)
      << "</a></th>";
  o << "</tr>\n";
  for (const auto& [key, by_column] : grid) {
    const json& inst = (*by_column.begin()->second)["instance"];
    o << "<tr><td>" << html_escape(std::get<0>(key)) << "</td><td class=\"num\">"
      << length_text(inst) << "</td><td class=\"num\">" << depth_text(inst) << "</td><td>"
      << html_escape(std::get<3>(key)) << "</td>";
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto it = by_column.find(i);
      if (it == by_column.end()) {
        o << "<td class=\"num\">–</td>";
        continue;
      }
      const double score = (*it->second)["score"].get<double>();
      o << "<td class=\"num\" style=\"background:" << score_colour(score) << "\"><a href=\"" << page
        << "#" << html_escape(cell_anchor((*it->second)["id"].get<std::string>())) << "\">"
        << number(score, "%.2f") << "</a></td>";
    }
    o << "</tr>\n";
  }
  o << "<tr><th colspan=\"4\">mean [95% interval], n</th>";
  for (size_t i = 0; i < rows.size(); ++i) {
    const stats::Estimate e = stats::estimate_mean(column_scores[i]);
    // The mean over its interval over the method and n, one per line.
    char mean[32];
    std::snprintf(mean, sizeof mean, "%.3f", e.mean);
    o << "<th class=\"num\">" << mean;
    if (!std::isnan(e.ci.lo))
      o << "<br>[" << number(e.ci.lo, "%.3f") << ",&nbsp;" << number(e.ci.hi, "%.3f") << "]";
    o << "<br>" << (e.kind == stats::ScoreKind::PassFail ? "W" : "B") << "&nbsp;n=" << e.n
      << "</th>";
  }
  o << "</tr>\n</table>\n";
  return o.str();
}

}  // namespace kvbench
