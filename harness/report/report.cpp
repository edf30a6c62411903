#include "harness/report/report.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "harness/report/plots.h"
#include "harness/report/stats.h"
#include "harness/report/table.h"
#include "model/common/atomic_file.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

// The one HTML encoder: every string that reaches report.html goes through
// it (text and attribute values alike).
std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Markdown table -> HTML table (the markdown is ours: one header row, one rule row).
std::string markdown_table_to_html(const std::string& md) {
  std::istringstream in(md);
  std::string line;
  std::ostringstream o;
  o << "<table>\n";
  int row = 0;
  while (std::getline(in, line)) {
    if (line.size() < 2 || line[0] != '|') continue;
    if (row++ == 1) continue;  // the |---| rule
    o << "<tr>";
    std::string cell;
    std::istringstream cells(line.substr(1));
    while (std::getline(cells, cell, '|')) {
      const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      const std::string text = b == std::string::npos ? "" : cell.substr(b, e - b + 1);
      o << (row == 1 ? "<th>" : "<td>") << html_escape(text) << (row == 1 ? "</th>" : "</td>");
    }
    o << "</tr>\n";
  }
  return o.str() + "</table>\n";
}

// Per task and configuration: mean score with its 95% interval and n (a
// compact second table; Wilson or bootstrap by the cell's scores, as the
// main table).
std::string per_task_markdown(const std::vector<json>& cells) {
  // task -> configuration -> [instances] scores
  std::map<std::string, std::map<std::pair<int, std::string>, std::vector<double>>> acc;
  std::map<std::pair<int, std::string>, bool> configs;
  for (const auto& c : cells) {
    const std::pair<int, std::string> key{c["policy"].value("index", 0),
                                          c["policy"]["label"].get<std::string>()};
    acc[c["instance"]["task"].get<std::string>()][key].push_back(c["score"].get<double>());
    configs[key] = true;
  }
  std::ostringstream o;
  o << "| Task |";
  for (const auto& [k, _] : configs) o << " " << k.second << " |";
  o << "\n|---|";
  for (size_t i = 0; i < configs.size(); ++i) o << "---:|";
  o << "\n";
  for (const auto& [task, by] : acc) {
    o << "| " << task << " |";
    for (const auto& [k, _] : configs) {
      const auto it = by.find(k);
      if (it == by.end())
        o << " – |";
      else {
        const stats::Estimate e = stats::estimate_mean(it->second);
        o << " " << stats::format_estimate(e.mean, e.ci) << " "
          << (e.kind == stats::ScoreKind::PassFail ? "W" : "B") << " n=" << e.n << " |";
      }
    }
    o << "\n";
  }
  return o.str();
}

// What the intervals are, for report.md and report.html.
std::string intervals_legend() {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%d resamples, fixed seed", stats::kBootstrapResamples);
  return std::string(
             "Every score carries its 95% interval over the instances, [low, high]. Interval "
             "says which and over how many instances (n): Wilson when every score of the row is "
             "0 or 1 (pass/fail), otherwise a percentile bootstrap over instances (") +
         buf +
         "; a single fractional score has none). Context Retention's interval is the score's, "
         "divided by the full cache's score when that is the same on every instance (typically "
         "1), otherwise a bootstrap over the instances paired with the full cache; the full "
         "cache's own row is 100% by definition. With few instances the intervals are wide: read "
         "differences inside them as noise.";
}

}  // namespace

ReportSummary write_report(const RunFolder& run) {
  const auto cells = run.cells();
  const json meta = run.meta();
  const json& config = run.config();
  ReportSummary summary;
  summary.cells = static_cast<int>(cells.size());
  summary.expected_cells = meta.contains("plan") ? meta["plan"].value("cells", 0) : 0;

  const auto rows = build_table(cells);
  summary.table_markdown = table_markdown(rows);
  write_file_atomic(run.path("table.md"), summary.table_markdown);
  write_file_atomic(run.path("table.csv"), table_csv(rows));

  // predictions.jsonl: one line per cell, sorted by cell id (deterministic).
  std::string predictions;
  for (const auto& c : cells) {
    predictions += dump_json(json{{"cell", c["id"]},
                                  {"instance", c["instance"]["id"]},
                                  {"policy", c["policy"]["label"]},
                                  {"prediction", c.value("prediction", "")},
                                  {"answers", c.value("answers", json::array())},
                                  {"score", c["score"]}},
                             -1) +
                   "\n";
  }
  write_file_atomic(run.path("predictions.jsonl"), predictions);
  json metrics = {{"experiment", config.value("name", "")},
                  {"cells", summary.cells},
                  {"table", table_json(rows)},
                  {"per_cell", cells}};
  write_file_atomic(run.path("metrics.json"), dump_json(metrics, 1) + "\n");

  const PlotResult plots = write_plots(cells, rows, run.dir());
  summary.plot_warning = plots.warning;
  const std::string per_task = per_task_markdown(cells);

  std::ostringstream md;
  md << "# kvbench report: " << config.value("name", "") << "\n\n";
  if (!config.value("description", "").empty())
    md << config["description"].get<std::string>() << "\n\n";
  md << "- cells: " << summary.cells;
  if (summary.expected_cells) md << " of " << summary.expected_cells;
  md << "\n- model: `" << config.value("model", "") << "`";
  if (meta.contains("model_sha256"))
    md << " (sha256 " << meta["model_sha256"].get<std::string>().substr(0, 16) << "…)";
  md << "\n- threads: " << config.value("threads", 0);
  if (meta.contains("cpu")) md << ", CPU: " << meta["cpu"].get<std::string>();
  if (meta.contains("git_commit"))
    md << "\n- kvbench commit: " << meta["git_commit"].get<std::string>();
  if (meta.contains("work")) {
    const json& w = meta["work"];
    md << "\n- prefill tokens computed: " << w.value("prefill_tokens_computed", int64_t{0})
       << " (a naive run: " << w.value("prefill_tokens_naive", int64_t{0}) << ")";
  }
  md << "\n\nMemory Usage and Inference Speed are relative to the full cache (hot KV bytes at "
        "question time, restored "
        "pages included; median decode tokens/s); Context Retention is the task score relative to "
        "the full cache on "
        "the same instances. Needle held: share of the needle's K/V in any tier (hot or cold); "
        "Needle attended: in "
        "the hot set attention reads at question time. Peak KV (prefill): the most hot KV bytes "
        "held at once while "
        "the prompt went in. Policy time: the policy's own work (scoring, eviction, restore, "
        "observation) as a share "
        "of the cell's wall time; observation in decode runs on the attention threads, whose times "
        "add up.\n\n"
     << intervals_legend() << "\n\n"
     << summary.table_markdown << "\n## Score per task\n\n"
     << "Mean score with its 95% interval; W: Wilson, B: bootstrap; n instances.\n\n"
     << per_task << "\n";
  if (!plots.files.empty()) {
    md << "## Plots\n\n";
    for (const auto& f : plots.files)
      if (f.size() > 4 && f.substr(f.size() - 4) == ".png") md << "![" << f << "](" << f << ")\n\n";
  }
  if (!plots.warning.empty()) md << "> " << plots.warning << "\n";
  write_file_atomic(run.path("report.md"), md.str());

  std::ostringstream html;
  html << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>kvbench: "
       << html_escape(config.value("name", ""))
       << "</title>\n<style>body{font-family:sans-serif;margin:2em;}"
       << "table{border-collapse:collapse;font-size:0.9em}td,th{border:1px solid #ccc;padding:4px "
          "8px;text-align:right}"
       << "td:first-child,th:first-child{text-align:left}svg{max-width:100%;height:auto}</style></"
          "head><body>\n"
       << "<h1>kvbench report: " << html_escape(config.value("name", "")) << "</h1>\n<p>"
       << html_escape(config.value("description", "")) << "</p>\n<p>cells: " << summary.cells;
  if (summary.expected_cells) html << " of " << summary.expected_cells;
  html << "; model: <code>" << html_escape(config.value("model", ""))
       << "</code>; threads: " << config.value("threads", 0) << "</p>\n"
       << "<p>" << html_escape(intervals_legend()) << "</p>\n"
       << markdown_table_to_html(summary.table_markdown) << "<h2>Score per task</h2>\n"
       << "<p>Mean score with its 95% interval; W: Wilson, B: bootstrap; n instances.</p>\n"
       << markdown_table_to_html(per_task) << "<h2>Plots</h2>\n";
  for (const auto& f : plots.files)
    if (f.size() > 4 && f.substr(f.size() - 4) == ".svg") {
      // Inline the <svg> element itself (without the XML prolog).
      const std::string svg = read_file(run.path(f));
      const auto at = svg.find("<svg");
      if (at != std::string::npos) html << "<div>" << svg.substr(at) << "</div>\n";
    }
  if (!plots.warning.empty()) html << "<p>" << html_escape(plots.warning) << "</p>\n";
  html << "</body></html>\n";
  write_file_atomic(run.path("report.html"), html.str());
  return summary;
}

}  // namespace kvbench
