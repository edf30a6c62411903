#include "harness/report/report.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>

#include "harness/encode/csv.h"
#include "harness/encode/markdown.h"
#include "harness/report/arithmetic.h"
#include "harness/report/cells_table.h"
#include "harness/report/curve_stats.h"
#include "harness/report/html.h"
#include "harness/report/layer_kinds.h"
#include "harness/report/models.h"
#include "harness/report/per_task.h"
#include "harness/report/plot_prune.h"
#include "harness/report/plots.h"
#include "harness/report/predictions_page.h"
#include "harness/report/run_time.h"
#include "harness/report/speed_withheld.h"
#include "harness/report/stats.h"
#include "harness/report/summary.h"
#include "harness/report/table.h"
#include "harness/run/machines.h"
#include "model/common/atomic_file.h"
#include "model/common/error.h"
#include "model/common/input_file.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

// The per-task and per-instance tables' key to their interval letters.
constexpr const char* kIntervalKinds =
    "W: Wilson, B: bootstrap (at least Wilson's for scores in [0, 1])";

// What the intervals are, for report.md and report.html.
std::string intervals_legend() {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%d resamples, fixed seed", stats::kBootstrapResamples);
  return std::string(
             "Every score carries its 95% interval over the instances, [low, high]. Interval "
             "says which and over how many instances (n): Wilson when every score of the row is "
             "0 or 1 (pass/fail), otherwise a percentile bootstrap over instances (") +
         buf +
         "), which bootstrap+Wilson widens to at least the Wilson interval of the row's mean "
         "when every score is in [0, 1]: such a score varies at most as a pass/fail score of "
         "that mean does, and a bootstrap over few instances, or over instances that agree, "
         "understates that. A single fractional score outside [0, 1] has none. Context "
         "Retention's interval is the score's, divided by the full cache's score when that is "
         "the same on every instance (typically 1); otherwise, for pass/fail scores, the score "
         "interval for a ratio of paired proportions (Tang, Tang & Chan 2003), which does not "
         "collapse to zero width, and for other scores a bootstrap over the instances paired "
         "with the full cache; the full cache's own row is 100% by definition. With few "
         "instances the intervals are wide: read differences inside them as noise.";
}

// The figures of the HTML report, in reading order: plot stem, heading,
// anchor, and what the reader should look at.
struct Figure {
  const char* stem;
  const char* heading;
  const char* anchor;
  const char* caption;
};
constexpr Figure kFigures[] = {
    {"score-vs-ratio", "Score vs compression ratio", "ratio",
     "Mean score against the share of the context evicted (1 - a ratio budget), one line per "
     "policy family (colour and marker from the Okabe-Ito palette, named in the legend); bars: "
     "95% intervals; dashed line and grey band: the full cache's score and its 95% interval. "
     "Panels: all tasks, then each RULER category present (columns), per model (rows); the "
     "number of instances behind each panel in its title. Only configurations with a ratio "
     "budget are drawn; with more than eight families, the eight of highest AUC (their points "
     "spread a little sideways around each ratio so bars do not cover each other), and every "
     "family in the next figure."},
    {"score-vs-ratio-all", "Score vs compression ratio, every family", "ratio-all",
     "The same curves for every policy family, on the same panels and in the same colours and "
     "markers as above."},
    {"score-vs-memory", "Score vs memory", "memory",
     "Mean score against hot KV memory at question time (% of the full cache's on the same "
     "instances, log scale), a panel per task (all tasks first) and per model; one line per "
     "policy family (colour and marker, named in the legend) through its configurations; bars: "
     "95% intervals; dashed line and grey band: the full cache's score and its 95% interval."},
    {"heatmaps", "Needle heatmaps", "heatmaps",
     "One figure per needle task: mean score by needle depth (rows, 0% at the top) and context "
     "length (columns), one panel per configuration in the table's order, one viridis colour "
     "scale (dark 0, yellow 1); each box prints k/n, its summed score over its n instances (the "
     "passes for pass/fail tasks); blank: no instance. Each instance's score and output: the "
     "per-instance grid below."},
    {"needle-layers", "Needle survival per layer", "layers",
     "Share of the needle's K/V per layer (columns) and configuration (rows), mean over the cells "
     "with a needle: held in any tier (left) and in the hot set attention reads at question time, "
     "restored pages included (right). For a model with sliding-window layers, the strip above "
     "the rows marks each layer's kind: dark global (attends the whole context), light local "
     "(its window only)."},
    {"score-vs-budget", "Score vs budget", "budget",
     "Mean score against the policy's budget, every configuration with one: token budgets (log "
     "scale) and ratio budgets (share of the prompt kept) in panels of their own, per model; one "
     "line per base policy (its spec without the budget); bars: 95% intervals; dashed line and "
     "grey band: the full cache's score and its 95% interval."},
};

// <img> of plots/<stem>.svg (or of each of its per-task parts) when gnuplot
// wrote it.
std::string figure_html(const std::vector<std::string>& files, const std::string& stem,
                        const std::string& alt) {
  std::string out;
  for (const std::string& svg : figure_svgs(files, stem))
    out += "<p><img src=\"" + html_escape(svg) + "\" alt=\"" + html_escape(alt) + "\"></p>\n";
  return out;
}

const char* kStyle =
    "body{font-family:sans-serif;margin:1.5em auto;max-width:1400px;padding:0 1em;color:#222}"
    "h2{border-bottom:1px solid #ddd;padding-bottom:0.2em;margin-top:1.6em}"
    "table{border-collapse:collapse;font-size:0.82em}"
    "td,th{border:1px solid #ccc;padding:3px 5px;text-align:right}"
    "td:first-child,th:first-child{text-align:left;min-width:9em}"
    // A figure stays on one line with its interval; a wide table scrolls
    // inside its .wide container instead of the page.
    "td:not(:first-child){white-space:nowrap}"
    "table.grid td,table.grid th{font-size:0.9em;padding:2px 5px}"
    "table.grid td:nth-child(-n+4){text-align:left;white-space:nowrap}"
    "table.grid td:first-child,table.grid th:first-child{min-width:0}"
    ".wide{overflow-x:auto}img{max-width:100%;height:auto}"
    "ul.summary li{margin:0.3em 0}nav a{margin-right:1em}.note{color:#555;font-size:0.9em}";

}  // namespace

namespace {

// One model's part of the report (all of it for a run of one model).
struct Section {
  std::string label;
  const std::vector<json>* cells = nullptr;
  std::vector<TableRow> rows;
  std::string table, per_task, speed;
  std::string curves;  // the AUC table (curve_stats.h); empty without ratio budgets
  std::vector<std::string> sentences;
  std::string predictions;  // its predictions page: predictions.html or predictions-<k>.html
  std::string suffix;       // of its figures' file names: "" or "-<k>"
};

// "### Model: <label>" before each model's part of a markdown section; nothing
// with one model.
std::string md_heading(const Section& s, bool several) {
  return several ? "### Model: " + markdown_cell(s.label) + "\n\n" : "";
}
std::string html_heading(const Section& s, bool several) {
  return several ? "<h3>Model: " + html_escape(s.label) + "</h3>\n" : "";
}

// How the run was made, as meta.json's "invocation" records it: the
// experiment file and the command line's changes to it, so a reader of a
// report whose description was written for the unchanged experiment sees
// what differs. Empty for a run folder made before it was recorded. Plain
// text; each caller encodes it for its sink.
std::string invocation_text(const json& meta) {
  if (!meta.contains("invocation")) return "";
  const json& inv = meta["invocation"];
  std::string text = "As run: " + inv["experiment"].get<std::string>().substr(0, 500);
  const json overrides = inv.value("overrides", json::array());
  if (overrides.empty()) return text + ", unchanged.";
  text += ", changed on the command line by ";
  size_t shown = 0;
  for (const auto& o : overrides) {
    if (shown == 20) {
      text += ", and " + std::to_string(overrides.size() - shown) + " more";
      break;
    }
    text += (shown++ ? ", " : "") + o.get<std::string>().substr(0, 300);
  }
  return text + " (the description above is the experiment file's, written before these changes).";
}

// The models a run used, as meta.json records them (one line each).
std::vector<std::string> model_lines(const json& config, const json& meta) {
  std::vector<std::string> out;
  if (meta.contains("models")) {
    for (const auto& m : meta["models"]) {
      std::string line = m["label"].get<std::string>() + ": " + m["path"].get<std::string>() +
                         " (sha256 " + m["sha256"].get<std::string>().substr(0, 16) + "…)";
      // Runs made apart and merged: where each model's cells were computed.
      if (m.contains("cpu")) line += ", CPU: " + m["cpu"].get<std::string>();
      if (m.contains("git_commit"))
        line += ", kvbench commit " + m["git_commit"].get<std::string>() +
                (m.value("git_dirty", false) ? " (built with uncommitted changes)" : "");
      if (m.contains("machines")) line += ", machines: " + machines_text(m["machines"]);
      out.push_back(line);
    }
    return out;
  }
  std::string line = config.value("model", "");
  if (meta.contains("model_sha256"))
    line += " (sha256 " + meta["model_sha256"].get<std::string>().substr(0, 16) + "…)";
  out.push_back(line);
  return out;
}

// How many cells the folder's current table was made from: the sum of
// table.csv's "cells" column (0 without one). A damaged table.csv is an
// InputError naming it.
int64_t cells_in_table(const RunFolder& run) {
  const std::string path = run.path("table.csv");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  const auto records = parse_csv(read_regular_file(path, kMaxConfigBytes, "a table"), path, 100000);
  if (records.empty()) return 0;
  const auto column = std::find(records[0].begin(), records[0].end(), "cells");
  if (column == records[0].end()) throw InputError(path + ": no \"cells\" column");
  const size_t at = static_cast<size_t>(column - records[0].begin());
  int64_t total = 0;
  for (size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() == 1 && records[r][0].empty()) continue;  // a blank line
    int64_t n = -1;
    const std::string& v = at < records[r].size() ? records[r][at] : "";
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 0 || n > (int64_t{1} << 40))
      throw InputError(path + ": record " + std::to_string(r + 1) + ": \"cells\" is not a count");
    total += n;
  }
  return total;
}

// Cells decoded in batches (decoding.batch) have no decode rate of their
// own: the speed legend says so, with their batches' median throughput.
std::string batched_decoding_note(const std::vector<json>& cells) {
  std::vector<double> tok_s;
  int most = 1;
  for (const json& c : cells) {
    if (!c.contains("timing") || !c["timing"].is_object()) continue;
    const json& t = c["timing"];
    if (!t.contains("decode_batch") || !t["decode_batch"].is_number_integer()) continue;
    most = std::max(most, t["decode_batch"].get<int>());
    if (t.contains("decode_batch_tok_s") && t["decode_batch_tok_s"].is_number())
      tok_s.push_back(t["decode_batch_tok_s"].get<double>());
  }
  if (most <= 1) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", stats::median(tok_s));
  return " The answers were decoded up to " + std::to_string(most) +
         " cells at a time (decoding.batch), one step for all of them: a batched cell has no "
         "decode rate of its own, so Decode tok/s and Inference Speed are empty; the batches' "
         "median throughput was " +
         (tok_s.empty() ? std::string("not measured") : std::string(buf) + " tok/s") + ".";
}

}  // namespace

ReportSummary write_report(const RunFolder& run, const std::string& withhold_speed) {
  json meta = run.meta();
  if (!withhold_speed.empty()) meta["speed_withheld"] = withhold_speed;
  // Timings the run's owner withheld (speed_withheld.h) are not reported.
  const std::string withheld = speed_withheld(meta);
  const auto cells = withheld.empty() ? run.cells() : without_speed(run.cells());
  // A table is never replaced by one of fewer cells: a folder whose cells/
  // is gone (a committed results folder keeps its tables only) or lost some
  // would otherwise overwrite its findings with an empty or smaller table.
  if (const int64_t had = cells_in_table(run); static_cast<int64_t>(cells.size()) < had)
    throw InputError(
        run.path("table.csv") + ": made from " + std::to_string(had) +
        " cells, but the folder holds " + std::to_string(cells.size()) +
        (cells.empty() ? " (no cells/: a results folder committed without them?)" : "") +
        ": refusing to replace it with a table of fewer cells (remove table.csv "
        "to render from the cells there are)");
  if (!withhold_speed.empty()) write_json_atomic(run.path("meta.json"), meta);
  const json& config = run.config();
  const std::string name = config.value("name", "");
  ReportSummary summary;
  summary.cells = static_cast<int>(cells.size());
  summary.expected_cells = meta.contains("plan") ? meta["plan"].value("cells", 0) : 0;

  const std::vector<ModelSection> models = split_by_model(cells, config);
  const bool several = models.size() > 1;
  std::vector<Section> sections;
  for (size_t k = 0; k < models.size(); ++k) {
    Section s;
    s.label = models[k].label;
    s.cells = &models[k].cells;
    s.rows = build_table(*s.cells);
    s.table = table_markdown(s.rows);
    s.per_task = per_task_markdown(*s.cells);
    s.curves = curve_table_markdown(*s.cells);
    s.speed = speed_markdown(s.rows);
    s.sentences = summary_sentences(*s.cells, s.rows);
    s.predictions = several ? "predictions-" + std::to_string(k + 1) + ".html" : "predictions.html";
    s.suffix = several ? "-" + std::to_string(k + 1) : "";
    sections.push_back(std::move(s));
  }

  for (const auto& s : sections)
    summary.table_markdown += md_heading(s, several) + s.table + (several ? "\n" : "");
  write_file_atomic(run.path("table.md"), summary.table_markdown);
  for (const auto& s : sections) summary.tables.push_back({several ? s.label : "", s.rows});
  std::vector<ModelRows> csv_models;
  for (const auto& s : sections) csv_models.push_back({s.label, &s.rows});
  write_file_atomic(run.path("table.csv"), table_csv(csv_models));
  write_cell_tables(run, models);

  // predictions.jsonl: one line per cell, sorted by cell id (deterministic).
  std::string predictions;
  for (const auto& c : cells) {
    json line = {{"cell", c["id"]},
                 {"instance", c["instance"]["id"]},
                 {"policy", c["policy"]["label"]},
                 {"prediction", c.value("prediction", "")},
                 {"answers", c.value("answers", json::array())},
                 {"score", c["score"]}};
    if (several) line["model"] = cell_model_label(c, default_model_label(config));
    predictions += dump_json(line, -1) + "\n";
  }
  write_file_atomic(run.path("predictions.jsonl"), predictions);
  if (several) {
    // predictions.html lists the models' pages.
    std::ostringstream index;
    index << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>kvbench predictions: "
          << html_escape(name) << "</title>\n<style>" << kStyle << "</style></head><body>\n"
          << "<h1>Predictions: " << html_escape(name) << "</h1>\n"
          << "<p><a href=\"report.html\">back to the report</a>. One page per model:</p>\n<ul>\n";
    for (const auto& s : sections) {
      write_file_atomic(run.path(s.predictions),
                        predictions_html(*s.cells, s.rows, name + " — " + s.label));
      index << "<li><a href=\"" << s.predictions << "\">" << html_escape(s.label) << "</a> ("
            << s.cells->size() << " cells)</li>\n";
    }
    index << "</ul>\n</body></html>\n";
    write_file_atomic(run.path("predictions.html"), index.str());
  } else {
    write_file_atomic(run.path("predictions.html"),
                      predictions_html(cells, sections.front().rows, name));
  }
  json metrics = {{"experiment", name}, {"cells", summary.cells}};
  if (several) {
    json per_model = json::array();
    for (const auto& s : sections)
      per_model.push_back(
          {{"model", s.label}, {"cells", s.cells->size()}, {"table", table_json(s.rows)}});
    metrics["models"] = per_model;
  } else {
    metrics["table"] = table_json(sections.front().rows);
  }
  metrics["per_cell"] = cells;
  write_file_atomic(run.path("metrics.json"), dump_json(metrics, 1) + "\n");

  std::vector<PlotModel> plot_models;
  for (const auto& s : sections)
    plot_models.push_back({s.label, s.cells, &s.rows, local_layers_of(config, s.label)});
  if (!withheld.empty()) remove_speed_plots(run.path("plots"));
  const PlotResult plots = write_plots(plot_models, run.dir(), run.lock_fd());
  summary.plot_warning = plots.warning;
  // Figures an earlier render drew from other cells go (plot_prune.h); after a
  // failed gnuplot the folder keeps what it had.
  if (plots.warning.empty()) remove_undrawn_plots(run.path("plots"), plots.files);

  const std::vector<std::string> model_list = model_lines(config, meta);
  std::ostringstream about;  // the run, as markdown list items
  about << "- cells: " << summary.cells;
  if (summary.expected_cells) about << " of " << summary.expected_cells;
  if (model_list.size() == 1) {
    about << "\n- model: " << markdown_text(config.value("model", ""));
    if (meta.contains("model_sha256"))
      about << " (sha256 " << meta["model_sha256"].get<std::string>().substr(0, 16) << "…)";
  } else {
    about << "\n- models:";
    for (const auto& m : model_list) about << "\n  - " << markdown_cell(m);
  }
  about << "\n- arithmetic: " << markdown_text(arithmetic_text(config), 80);
  about << "\n- threads: " << config.value("threads", 0);
  // meta.json comes from whoever shared the folder: one line each, escaped.
  if (meta.contains("cpu"))
    about << ", CPU: " << markdown_text(meta["cpu"].get<std::string>(), 200);
  if (meta.contains("git_commit"))
    about << "\n- kvbench commit: " << markdown_text(meta["git_commit"].get<std::string>(), 80)
          << (meta.value("git_dirty", false) ? " (built with uncommitted changes)" : "");
  // Shards merged from several machines or builds: which ran where.
  if (meta.contains("machines"))
    about << "\n- machines: " << markdown_text(machines_text(meta["machines"]), 4000);
  if (const std::string t = run_time_text(meta); !t.empty())
    about << "\n- run time: " << markdown_text(t, 2000);
  if (meta.contains("work")) {
    const json& w = meta["work"];
    about << "\n- prefill tokens computed: " << w.value("prefill_tokens_computed", int64_t{0})
          << " (a naive run: " << w.value("prefill_tokens_naive", int64_t{0}) << ")";
  }
  const std::string columns_legend =
      "Memory Usage and Inference Speed are relative to the full cache (hot KV bytes at question "
      "time, restored pages included; median decode tokens/s); Context Retention is the task "
      "score relative to the full cache on the same instances. Needle held: share of the "
      "needle's K/V in any tier (hot or cold); Needle attended: in the hot set attention reads at "
      "question time. Peak KV (prefill): the most hot KV bytes held at once while the prompt "
      "went in. Policy time: the policy's own work (scoring, eviction, restore, observation) as a "
      "share of the cell's wall time; observation in decode runs on the attention threads, whose "
      "times add up. A family's budgets ranked from one scoring pass each count that pass, so "
      "a cell's policy time is what it would take alone." +
      std::string(withheld.empty() ? ""
                                   : " Inference Speed, the rates, TTFT and Policy time are empty: "
                                     "this run's timings are withheld (see Speed).");
  const std::string models_legend =
      " With several models every model has its own table, relative to its own full cache.";
  const std::string speed_legend =
      "Median over each configuration's cells, in brackets the slowest and the fastest cell (a "
      "spread, not a confidence interval: the cells differ in context length and task as well as "
      "in noise). Inference Speed: each cell's decode rate over the full cache's on the same "
      "instance, the median of those ratios with its 95% bootstrap interval over the instances. "
      "Timings vary from run to run; every other number is deterministic." +
      batched_decoding_note(cells);
  // A run whose timings are withheld prints none (its cells keep them).
  const std::string withheld_legend =
      "Not reported: " + withheld + (withheld.empty() || withheld.back() == '.' ? "" : ".") +
      " The cells keep their timing fields, but this report prints no decode or prefill "
      "rate, TTFT, Inference Speed or Policy time from them, and draws no speed plot.";
  const std::string curves_legend =
      "Per policy family with two or more ratio budgets: AUC is the mean over instances of the "
      "area under that instance's score-vs-compression-ratio curve over the tested ratios "
      "(trapezoids, divided by the range: the mean score over it), with its 95% bootstrap "
      "interval; only instances with a cell at every ratio count (n). Each family against the "
      "leader: the mean paired difference of the instances' AUCs with its 95% bootstrap "
      "interval and the two-sided paired sign-flip test on that mean (9,999 draws; '≤ 0.0001': "
      "none was as extreme); a difference is called one "
      "when p < 0.05 and the interval excludes 0, 'unsettled' when only one of the two says so. "
      "'Not distinguished' means this run could not tell them apart, not that they are equal.";
  const std::string summary_legend =
      "Generated from the cells: scores are means over all tasks with their 95% intervals; a "
      "difference is called one only when the paired test on the same instances gives p < 0.05.";

  // Every report says when its policies compressed (config.json's
  // decoding.protocol; absent in the seed's protocol and in older folders).
  const json* decoding = config.contains("decoding") ? &config["decoding"] : nullptr;
  const bool agnostic = decoding && decoding->is_object() &&
                        decoding->value("protocol", json("")) == json("query_agnostic");
  const std::string protocol_line =
      agnostic ? "Protocol: query-agnostic (kvpress's): the context was compressed before the "
                 "question was seen; ratio budgets are ratios of the context; the question was "
                 "then added whole and nothing was evicted while it and the answer ran."
               : "Protocol: query-aware (the seed's): the whole prompt, question included, was "
                 "prefilled before the policy compressed it (streaming policies evict as they go).";

  std::ostringstream md;
  // Text from config.json (others' folders included): one line each,
  // through the Markdown encoder (no HTML, no markup of its own).
  md << "# kvbench report: " << markdown_text(name, 200) << "\n\n";
  if (!config.value("description", "").empty())
    md << markdown_text(config["description"].get<std::string>(), 4000, true) << "\n\n";
  const std::string invocation = invocation_text(meta);
  if (!invocation.empty()) md << markdown_text(invocation, 8000, true) << "\n\n";
  md << protocol_line << "\n\n";
  md << "## Summary\n\n" << summary_legend << "\n\n";
  for (const auto& s : sections) {
    md << md_heading(s, several);
    for (const auto& sentence : s.sentences) md << "- " << markdown_text(sentence) << "\n";
    if (several) md << "\n";
  }
  md << "\n"
     << about.str() << "\n\n## Table\n\n"
     << columns_legend << (several ? models_legend : "") << "\n\n"
     << intervals_legend() << "\n\n"
     << summary.table_markdown << "\n## Score per task\n\n"
     << "Mean score with its 95% interval; " << kIntervalKinds << "; n instances.\n\n";
  for (const auto& s : sections)
    md << md_heading(s, several) << s.per_task << (several ? "\n" : "");
  bool any_curves = false;
  for (const auto& s : sections) any_curves = any_curves || !s.curves.empty();
  if (any_curves) {
    md << "\n## Area under the score-vs-ratio curve\n\n" << curves_legend << "\n\n";
    for (const auto& s : sections)
      if (!s.curves.empty()) md << md_heading(s, several) << s.curves << (several ? "\n" : "");
  }
  if (withheld.empty()) {
    md << "\n## Speed\n\n" << speed_legend << "\n\n";
    for (const auto& s : sections) md << md_heading(s, several) << s.speed << (several ? "\n" : "");
  } else {
    md << "\n## Speed\n\n" << markdown_text(withheld_legend, 2000) << "\n";
  }
  md << "\nEach cell's prediction and expected answers: `predictions.html`, "
     << "`predictions.jsonl`.\n\n";
  if (!plots.files.empty()) {
    md << "## Plots\n\n";
    for (const auto& f : plots.files)
      if (f.size() > 4 && f.substr(f.size() - 4) == ".png") md << "![" << f << "](" << f << ")\n\n";
  }
  if (!plots.warning.empty()) md << "> " << markdown_text(plots.warning) << "\n";
  write_file_atomic(run.path("report.md"), md.str());

  // Figures drawn once per model with several models.
  const auto per_model_figure = [&](const Figure& f) {
    return several && std::string(f.stem) != "score-vs-memory" &&
           std::string(f.stem) != "score-vs-budget" && std::string(f.stem) != "score-vs-ratio" &&
           std::string(f.stem) != "score-vs-ratio-all";
  };
  const auto figure_exists = [&](const Figure& f) {
    if (!per_model_figure(f)) return !figure_svgs(plots.files, f.stem).empty();
    for (const auto& s : sections)
      if (!figure_svgs(plots.files, f.stem + s.suffix).empty()) return true;
    return false;
  };
  std::ostringstream html;
  html << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>kvbench: "
       << html_escape(name) << "</title>\n<style>" << kStyle << "</style></head><body>\n"
       << "<h1>kvbench report: " << html_escape(name) << "</h1>\n<nav><a href=\"#table\">table</a>"
       << "<a href=\"#tasks\">per task</a>" << (any_curves ? "<a href=\"#auc\">AUC</a>" : "");
  for (const Figure& f : kFigures)
    if (figure_exists(f))
      html << "<a href=\"#" << f.anchor << "\">" << html_escape(f.heading) << "</a>";
  html << "<a href=\"#speed\">speed</a><a href=\"#instances\">per instance</a>"
       << "<a href=\"predictions.html\">predictions</a></nav>\n<p>"
       << html_escape(config.value("description", "")) << "</p>\n"
       << (invocation.empty() ? "" : "<p>" + html_escape(invocation) + "</p>\n") << "<p>"
       << html_escape(protocol_line) << "</p>\n"
       << "<h2 id=\"summary\">Summary</h2>\n";
  for (const auto& s : sections) {
    html << html_heading(s, several) << "<ul class=\"summary\">\n";
    for (const auto& sentence : s.sentences) html << "<li>" << html_escape(sentence) << "</li>\n";
    html << "</ul>\n";
  }
  html << "<p class=\"note\">" << html_escape(summary_legend) << "</p>\n<p class=\"note\">"
       << "cells: " << summary.cells;
  if (summary.expected_cells) html << " of " << summary.expected_cells;
  if (model_list.size() == 1) {
    html << "; model: <code>" << html_escape(config.value("model", "")) << "</code>";
    if (meta.contains("model_sha256"))
      html << " (sha256 " << html_escape(meta["model_sha256"].get<std::string>().substr(0, 16))
           << "…)";
  } else {
    html << "; models:";
    for (size_t i = 0; i < model_list.size(); ++i)
      html << (i ? ";" : "") << " <code>" << html_escape(model_list[i]) << "</code>";
  }
  html << "; arithmetic: " << html_escape(arithmetic_text(config));
  html << "; threads: " << config.value("threads", 0);
  if (meta.contains("cpu")) html << "; CPU: " << html_escape(meta["cpu"].get<std::string>());
  if (meta.contains("git_commit"))
    html << "; kvbench commit " << html_escape(meta["git_commit"].get<std::string>())
         << (meta.value("git_dirty", false) ? " (built with uncommitted changes)" : "");
  if (meta.contains("machines"))
    html << "; machines: " << html_escape(machines_text(meta["machines"]));
  if (const std::string t = run_time_text(meta); !t.empty())
    html << "; run time: " << html_escape(t);
  html << "</p>\n<h2 id=\"table\">Table</h2>\n<p class=\"note\">"
       << html_escape(columns_legend + (several ? models_legend : "")) << "</p>\n<p class=\"note\">"
       << html_escape(intervals_legend())
       << " Each configuration links to its cells' predictions.</p>\n";
  for (const auto& s : sections)
    html << html_heading(s, several) << "<div class=\"wide\">"
         << markdown_table_to_html(s.table,
                                   [&s](int row) {
                                     return s.predictions + "#" +
                                            config_anchor(static_cast<size_t>(row));
                                   })
         << "</div>\n";
  html << "<h2 id=\"tasks\">Score per task</h2>\n"
       << "<p class=\"note\">Mean score with its 95% interval; " << kIntervalKinds
       << "; n instances.</p>\n";
  for (const auto& s : sections)
    html << html_heading(s, several) << "<div class=\"wide\">" << markdown_table_to_html(s.per_task)
         << "</div>\n";
  if (any_curves) {
    html << "<h2 id=\"auc\">Area under the score-vs-ratio curve</h2>\n<p class=\"note\">"
         << html_escape(curves_legend) << "</p>\n";
    for (const auto& s : sections)
      if (!s.curves.empty())
        html << html_heading(s, several) << "<div class=\"wide\">"
             << markdown_table_to_html(s.curves) << "</div>\n";
  }
  for (const Figure& f : kFigures) {
    if (!figure_exists(f)) continue;
    html << "<h2 id=\"" << f.anchor << "\">" << html_escape(f.heading)
         << "</h2>\n<p class=\"note\">" << html_escape(f.caption) << "</p>\n";
    if (!per_model_figure(f)) {
      html << figure_html(plots.files, f.stem, f.heading);
      continue;
    }
    for (const auto& s : sections) {
      const std::string img = figure_html(plots.files, f.stem + s.suffix, f.heading);
      if (!img.empty()) html << html_heading(s, several) << img;
    }
  }
  html << "<h2 id=\"speed\">Speed</h2>\n<p class=\"note\">"
       << html_escape(withheld.empty() ? speed_legend : withheld_legend) << "</p>\n";
  for (const auto& s : sections) {
    if (!withheld.empty()) break;
    html << html_heading(s, several) << "<div class=\"wide\">"
         << markdown_table_to_html(s.speed,
                                   [&s](int row) {
                                     return s.predictions + "#" +
                                            config_anchor(static_cast<size_t>(row));
                                   })
         << "</div>\n"
         << figure_html(plots.files, "speed" + s.suffix, "Speed");
  }
  html << "<h2 id=\"instances\">Per instance</h2>\n<p class=\"note\">Every cell's score; each "
          "links to the cell's prediction and expected answers in <a "
          "href=\"predictions.html\">predictions.html</a>. The last row: each configuration's mean "
          "with its 95% interval ("
       << kIntervalKinds << ").</p>\n";
  for (const auto& s : sections)
    html << html_heading(s, several) << "<div class=\"wide\">"
         << instance_grid_html(*s.cells, s.rows, s.predictions) << "</div>\n";
  if (!plots.warning.empty()) html << "<p>" << html_escape(plots.warning) << "</p>\n";
  html << "</body></html>\n";
  write_file_atomic(run.path("report.html"), html.str());
  return summary;
}

}  // namespace kvbench
