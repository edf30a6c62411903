#include "harness/report/plots.h"
#include "harness/report/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "harness/run/plan.h"
#include "harness/subprocess.h"
#include "model/common/atomic_file.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

// A label shown in enhanced-text mode: '_', '^' and the other markup
// characters would start sub/superscripts, so each is escaped.
std::string label(const std::string& s) {
  std::string escaped;
  for (char c : s) {
    if (c == '_' || c == '^' || c == '@' || c == '&' || c == '~' || c == '{' || c == '}' ||
        c == '\\')
      escaped += "\\";
    escaped += c;
  }
  return gnuplot_string(escaped);
}

// `name[1..n]` = the labels, as gnuplot statements: strings stay in commands
// (through gnuplot_string), data blocks hold numbers only.
std::string label_array(const std::string& name, const std::vector<std::string>& labels) {
  std::string out = "array " + name + "[" + std::to_string(labels.size()) + "]\n";
  for (size_t i = 0; i < labels.size(); ++i)
    out += name + "[" + std::to_string(i + 1) + "] = " + label(labels[i]) + "\n";
  return out;
}

std::string length_label(int64_t n) {
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n / 1024) + "k";
  if (n >= 1000 && n % 1000 == 0)
    return std::to_string(n / 1000) + "k";  // 8000 (SmolLM2's 8k less room)
  return std::to_string(n);
}

// One gnuplot script that draws a plot twice: PNG then SVG.
struct Script {
  std::ostringstream body;
  std::vector<std::string> files;
  void emit(std::ostringstream& out, const std::string& dir, const std::string& stem,
            const std::string& size, const std::string& commands) {
    for (const char* ext : {"png", "svg"}) {
      const std::string file = "plots/" + stem + "." + ext;
      out << (std::string(ext) == "png"
                  ? "set terminal pngcairo enhanced font 'Sans,10' size " + size + "\n"
                  : "set terminal svg enhanced font 'Sans,10' size " + size + "\n")
          << "set output " << gnuplot_string(dir + "/" + file) << "\n"
          << "reset\nset grid\n"
          << commands << "unset output\n";
      files.push_back(file);
    }
  }
};

}  // namespace

std::string gnuplot_string(const std::string& s) {
  // Single quotes: gnuplot expands no backslash escapes, no `command`
  // substitution and no @macros inside them; a quote is written twice.
  // A newline would end the command, so control characters are written as
  // visible escapes instead.
  std::string q = "'";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\'')
      q += "''";
    else if (c == '\n')
      q += "\\n";
    else if (c == '\r')
      q += "\\r";
    else if (c == '\t')
      q += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      q += hex;
    } else
      q += ch;
  }
  return q + "'";
}

std::string plot_slug(const std::string& label) {
  const std::string s = file_name_safe(label);
  return s.empty() ? "policy" : s;
}

PlotResult write_plots(const std::vector<json>& cells, const std::vector<TableRow>& rows,
                       const std::string& dir) {
  PlotResult result;
  std::error_code ec;
  std::filesystem::create_directories(dir + "/plots", ec);
  Script s;
  std::ostringstream script;
  script << "set encoding utf8\nset grid\n";

  // Needle heatmaps: mean score per (depth, length) for each configuration.
  std::map<std::string, std::map<std::pair<double, int64_t>, std::pair<double, int>>> heat;
  std::set<int64_t> lengths_all;
  for (const auto& c : cells) {
    const json& inst = c["instance"];
    if (!inst.contains("depth") || inst["depth"].is_null()) continue;
    const int64_t len = inst.value("length", int64_t{0});
    auto& e = heat[c["policy"]["label"].get<std::string>()][{inst["depth"].get<double>(), len}];
    e.first += c["score"].get<double>();
    e.second += 1;
    lengths_all.insert(len);
  }
  // In the table's row order (full first), then any label without a row.
  std::vector<std::string> order;
  for (const auto& r : rows)
    if (heat.count(r.label) && std::find(order.begin(), order.end(), r.label) == order.end())
      order.push_back(r.label);
  for (const auto& [name, grid] : heat)
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  for (const std::string& name : order) {
    const auto& grid = heat.at(name);
    std::vector<double> depths;
    std::vector<int64_t> lengths;
    for (const auto& [k, v] : grid) {
      if (std::find(depths.begin(), depths.end(), k.first) == depths.end())
        depths.push_back(k.first);
      if (std::find(lengths.begin(), lengths.end(), k.second) == lengths.end())
        lengths.push_back(k.second);
    }
    std::sort(depths.begin(), depths.end());
    std::sort(lengths.begin(), lengths.end());
    std::ostringstream cmd;
    cmd << "$heat << EOD\n";
    for (size_t di = 0; di < depths.size(); ++di)
      for (size_t li = 0; li < lengths.size(); ++li) {
        const auto it = grid.find({depths[di], lengths[li]});
        const double v = it == grid.end() ? NAN : it->second.first / it->second.second;
        cmd << li << " " << di << " " << (std::isnan(v) ? std::string("NaN") : std::to_string(v))
            << "\n";
      }
    cmd << "EOD\nunset grid\nset title " << label("Needle retrieval: " + name) << "\n"
        << "set xlabel 'context length (tokens)'\nset ylabel 'needle depth (%)'\n"
        << "set palette defined (0 '#d7191c', 0.5 '#fdae61', 0.75 '#ffffbf', 1 '#1a9641')\n"
        << "set cbrange [0:1]\nset cblabel 'score'\nset xrange [-0.5:" << lengths.size() - 0.5
        << "]\n"
        << "set yrange [-0.5:" << depths.size() - 0.5 << "]\nset xtics (";
    for (size_t i = 0; i < lengths.size(); ++i)
      cmd << (i ? ", " : "") << gnuplot_string(length_label(lengths[i])) << " " << i;
    cmd << ")\nset ytics (";
    for (size_t i = 0; i < depths.size(); ++i) {
      char d[16];
      std::snprintf(d, sizeof d, "%.0f", depths[i] * 100);
      cmd << (i ? ", " : "") << gnuplot_string(d) << " " << i;
    }
    // One filled box per cell (not `with image`, which needs at least two
    // columns and two rows to size its pixels); empty cells stay blank.
    cmd << ")\nplot $heat using 1:2:(0.5):(0.5):3 with boxxyerror fillstyle solid 1.0 noborder "
           "linecolor palette notitle, $heat using 1:2:(sprintf('%.2f', $3)) with labels notitle\n";
    s.emit(script, dir, "heatmap-" + plot_slug(name), "720,540", cmd.str());
  }

  // Score vs memory with the Pareto front (higher score at lower memory).
  {
    std::vector<std::pair<double, double>> pts;  // (memory %, score)
    std::vector<std::string> names;
    std::ostringstream cmd;
    cmd << "$pts << EOD\n";
    for (const auto& r : rows) {
      if (!r.memory_rel) continue;
      const double m = *r.memory_rel * 100;
      // Labels sit right of their point, clear of its error bar. Labels of
      // (nearly) coinciding points are stacked, not overprinted: the k-th
      // point within 3% of memory and 0.02 of score goes k lines up.
      int k = 0;
      for (const auto& [pm, ps] : pts) k += std::abs(pm - m) < 3 && std::abs(ps - r.score) < 0.02;
      pts.push_back({m, r.score});
      names.push_back(r.label);
      // Columns: memory %, score, label index, label height, the score's 95%
      // interval (the point itself when it has none).
      const double lo = std::isnan(r.score_ci.lo) ? r.score : r.score_ci.lo;
      const double hi = std::isnan(r.score_ci.hi) ? r.score : r.score_ci.hi;
      cmd << m << " " << r.score << " " << names.size() << " " << r.score + 0.04 * k << " " << lo
          << " " << hi << "\n";
    }
    cmd << "EOD\n$front << EOD\n";
    // The front: by memory, and at equal memory the best score only.
    std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    double best = -1, max_memory = 0;
    for (const auto& [m, sc] : pts) {
      max_memory = std::max(max_memory, m);
      if (sc > best) {
        cmd << m << " " << sc << "\n";
        best = sc;
      }
    }
    // The last step runs on to the largest memory plotted (steps need two
    // points, and nothing to the right beats the best score).
    if (!pts.empty()) cmd << max_memory << " " << best << "\n";
    cmd << "EOD\n"
        << label_array("point_label", names)
        << "set title 'Score vs KV memory'\nset xlabel 'KV bytes (% of the full cache)'\n"
        << "set ylabel 'score (bars: 95% interval)'\nset yrange [0:1.05]\n"
        // Room on the right for the last point's bar and label.
        << "set xrange [0:" << std::max(1.0, max_memory * 1.15) << "]\n"
        << "set key bottom right\n"
        << "plot $front using 1:2 with steps lw 2 lc rgb '#888888' title 'Pareto front', "
           "$pts using 1:2:5:6 with yerrorbars pt 7 ps 1.5 lw 1.5 lc rgb '#2b83ba' "
           "title 'configurations (95% interval)', "
           "$pts using 1:4:(point_label[int($3)]) with labels left offset 1,0 font ',8' "
           "notitle\n";
    if (!pts.empty()) s.emit(script, dir, "score-vs-memory", "900,600", cmd.str());
  }

  // Score vs budget, one line per base policy (cells carry policy.base and policy.budget).
  {
    // base policy -> budget -> [cells] scores
    std::map<std::string, std::map<double, std::vector<double>>> lines;
    double lo = 1e300, hi = 0;
    for (const auto& c : cells) {
      const json& p = c["policy"];
      if (!p.contains("budget") || p["budget"].is_null()) continue;
      const double budget = p["budget"].get<double>();
      lo = std::min(lo, budget);
      hi = std::max(hi, budget);
      lines[p.value("base", std::string("?"))][budget].push_back(c["score"].get<double>());
    }
    std::ostringstream cmd;
    int block = 0;
    std::string plot = "plot ";
    for (const auto& [base, pts] : lines) {
      cmd << "$b" << block << " << EOD\n";
      // Columns: budget, mean score, its 95% interval (the mean itself when
      // it has none: one fractional score).
      for (const auto& [budget, scores] : pts) {
        const stats::Estimate e = stats::estimate_mean(scores);
        cmd << budget << " " << e.mean << " " << (std::isnan(e.ci.lo) ? e.mean : e.ci.lo) << " "
            << (std::isnan(e.ci.hi) ? e.mean : e.ci.hi) << "\n";
      }
      cmd << "EOD\n";
      plot += std::string(block ? ", " : "") + "$b" + std::to_string(block) +
              " using 1:2:3:4 with yerrorlines lw 2 pt 7 title " + label(base);
      ++block;
    }
    cmd << "set title 'Score vs budget'\nset xlabel 'budget (tokens, or ratio of the context when "
           "<= 1)'\n"
        << "set ylabel 'score (bars: 95% interval)'\nset yrange [0:1.05]\nset key bottom right\n"
        // Token budgets spread over powers of two read best on a log axis.
        << (lo > 1 && hi / lo >= 4 ? "set logscale x 2\nset xrange [" + std::to_string(lo / 1.5) +
                                         ":" + std::to_string(hi * 1.5) + "]\n"
                                   : std::string("set xrange [0:*]\n"))
        << plot << "\n";
    if (block) s.emit(script, dir, "score-vs-budget", "900,600", cmd.str());
  }

  // Speed bars.
  {
    std::ostringstream cmd;
    cmd << "$speed << EOD\n";
    int n = 0;
    std::vector<std::string> names;
    for (const auto& r : rows) {
      if (std::isnan(r.decode_tok_s)) continue;
      cmd << n++ << " " << r.decode_tok_s << " "
          << (std::isnan(r.prefill_tok_s) ? 0.0 : r.prefill_tok_s) << "\n";
      names.push_back(r.label);
    }
    cmd << "EOD\n"
        << label_array("speed_label", names)
        << "set title 'Speed (median over cells)'\nset ylabel 'tokens/s'\nset style fill solid "
           "0.8\n"
        << "set boxwidth 0.4\nset xtics rotate by -30 font ',8'\nset key outside top center "
           "horizontal\n"
        << "set yrange [0:*]\nset offsets 0.5, 0.5, 0, 0\nset logscale y 10\nset yrange [1:*]\n"
        << "plot $speed using ($1-0.2):2:xtic(speed_label[int($1)+1]) with boxes lc rgb '#2b83ba' "
           "title 'decode', "
           "$speed using ($1+0.2):3 with boxes lc rgb '#abdda4' title 'prefill'\n";
    if (n) s.emit(script, dir, "speed", "900,600", cmd.str());
  }

  if (s.files.empty()) return result;
  // gnuplot opens its outputs itself and would follow a symbolic link: every
  // target is a regular file or absent (RunFolder::open checked plots/).
  for (const auto& f : s.files) refuse_non_regular_target(dir + "/" + f);
  // No shell: gnuplot itself, the script on its stdin.
  const int status = run_with_input({"gnuplot"}, script.str());
  if (status == 127) {
    result.warning =
        "gnuplot could not be started (is gnuplot installed? scripts/setup.sh installs "
        "gnuplot-nox); no plots written";
    return result;
  }
  if (status != 0)
    result.warning =
        "gnuplot failed (is gnuplot installed? scripts/setup.sh installs gnuplot-nox); plots may "
        "be missing";
  for (const auto& f : s.files)
    if (std::filesystem::exists(dir + "/" + f)) result.files.push_back(f);
  return result;
}

}  // namespace kvbench
