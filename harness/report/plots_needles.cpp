#include "harness/report/plots_needles.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "harness/report/plot_style.h"
#include "harness/report/plots.h"

namespace kvbench::plot {
namespace {

using json = nlohmann::json;

// Configurations in the table's order, then any label without a row.
std::vector<std::string> in_table_order(const std::vector<TableRow>& rows,
                                        const std::set<std::string>& labels) {
  std::vector<std::string> order;
  for (const auto& r : rows)
    if (labels.count(r.label) && std::find(order.begin(), order.end(), r.label) == order.end())
      order.push_back(r.label);
  for (const auto& l : labels)
    if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
  return order;
}

std::string value_or_nan(double sum, int n) {
  if (n == 0) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", sum / n);
  return buf;
}

// A vertical colour bar at the figure's right edge, drawn with the last
// panel (every other panel unsets it): one scale for all panels.
std::string colour_bar(double width_px, double height_px, double top_px, double bottom_px) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "set colorbox user origin screen %.4f, screen %.4f size screen %.4f, screen "
                "%.4f\nset cbtics 0.25 font ',8'\n",
                1.0 - 60.0 / width_px, bottom_px / height_px, 14.0 / width_px,
                (height_px - top_px - bottom_px) / height_px);
  return buf;
}

// One cell of a heatmap: the summed score and the instances behind it.
struct HeatCell {
  double sum = 0;
  int n = 0;
  bool pass_fail = true;  // every score 0 or 1: the sum counts passes
};

// plots/<stem>.{png,svg}: the cells of `task` with a needle depth, a panel
// per configuration in the table's order, rows depth (0% at the top),
// columns context length, colour the mean score (viridis, one scale for
// every panel), text k/n (the summed score over the n instances).
void heatmap_of_task(Script& s, const std::vector<json>& cells, const std::vector<TableRow>& rows,
                     const std::string& dir, const std::string& stem, const std::string& model,
                     const std::string& task) {
  // label -> (depth, length) -> cell
  std::map<std::string, std::map<std::pair<double, int64_t>, HeatCell>> heat;
  std::set<double> depth_set;
  std::set<int64_t> length_set;
  std::set<std::string> labels, instances;
  for (const auto& c : cells) {
    const json& inst = c["instance"];
    if (!inst.contains("depth") || !inst["depth"].is_number() || inst.value("task", "") != task)
      continue;
    const double depth = inst["depth"].get<double>();
    const int64_t len = inst.value("length", int64_t{0});
    const std::string name = c["policy"]["label"].get<std::string>();
    const double score = c["score"].get<double>();
    HeatCell& e = heat[name][{depth, len}];
    e.sum += score;
    e.n += 1;
    e.pass_fail = e.pass_fail && (score == 0.0 || score == 1.0);
    depth_set.insert(depth);
    length_set.insert(len);
    labels.insert(name);
    instances.insert(inst.value("id", ""));
  }
  const std::vector<double> depths(depth_set.begin(), depth_set.end());
  const std::vector<int64_t> lengths(length_set.begin(), length_set.end());
  const std::vector<std::string> order = in_table_order(rows, labels);

  // Panel size from the grid's shape, every box wide and tall enough for
  // its "k/n" at the 8-point font.
  const int n_len = static_cast<int>(lengths.size()), n_dep = static_cast<int>(depths.size());
  const double pw = std::clamp(70.0 + 46.0 * n_len, 200.0, 720.0);
  const double ph = std::clamp(62.0 + 24.0 * n_dep, 150.0, 640.0);
  const int n = static_cast<int>(order.size());
  const int columns = std::clamp(static_cast<int>(1250 / pw), 1, n);
  const int panel_rows = (n + columns - 1) / columns;
  const double title_px = 50, bar_px = 90;
  const double width = columns * pw + bar_px, height = panel_rows * ph + title_px;

  std::ostringstream cmd;
  const std::string what = shorten(task, 30) + " (" + std::to_string(instances.size()) +
                           (instances.size() == 1 ? " instance)" : " instances)");
  cmd << "unset grid\n"
      << kScorePalette
      << "set multiplot title "
      // Two lines: gnuplot's "\n" joins the two literals.
      << label((model.empty() ? std::string() : shorten(model, 40) + " · ") + what +
               ": mean score by needle depth (rows) and context length (columns)")
      << " . \"\\n\" . "
      << label("cell text k/n: summed score over the n instances (the passes when scores are 0/1)")
      << " font ',10'\n";
  for (int k = 0; k < n; ++k) {
    const auto& grid = heat.at(order[k]);
    // Columns: length index, depth index, mean, k, n, pass/fail, text colour.
    cmd << "$h" << k << " << EOD\n";
    for (int di = 0; di < n_dep; ++di)
      for (int li = 0; li < n_len; ++li) {
        const auto it = grid.find({depths[di], lengths[li]});
        if (it == grid.end()) continue;  // no instance: left blank
        const HeatCell& e = it->second;
        const double mean = e.sum / e.n;
        char line[160];
        std::snprintf(line, sizeof line, "%d %d %.6g %.6g %d %d %d\n", li, di, mean, e.sum, e.n,
                      e.pass_fail ? 1 : 0, text_rgb_on(mean));
        cmd << line;
      }
    cmd << "EOD\n";
    const int col = k % columns, row = k / columns;
    char place[200];
    std::snprintf(place, sizeof place, "set origin %.5f, %.5f\nset size %.5f, %.5f\n",
                  col * pw / width, 1.0 - (title_px + (row + 1) * ph) / height, pw / width,
                  ph / height);
    cmd << place << "set lmargin 6\nset rmargin 1.5\nset tmargin 2\nset bmargin 2\n"
        << "set title " << label(shorten(order[k], static_cast<size_t>((pw - 40) / 7)))
        << " font ',9'\n"
        << "set xrange [-0.5:" << n_len - 0.5 << "]\nset yrange [" << n_dep - 0.5 << ":-0.5]\n"
        << "set xtics font ',8' (";
    for (int i = 0; i < n_len; ++i)
      cmd << (i ? ", " : "") << tic_label(length_label(lengths[i])) << " " << i;
    cmd << ")\nset ytics font ',8' (";
    for (int i = 0; i < n_dep; ++i) {
      char d[16];
      std::snprintf(d, sizeof d, "%.0f%%", depths[i] * 100);
      cmd << (i ? ", " : "") << tic_label(d) << " " << i;
    }
    cmd << ")\n"
        << (k + 1 == n ? colour_bar(width, height, title_px + 30, 30) : "unset colorbox\n")
        // One filled box per cell (`with image` needs two columns and two
        // rows to size its pixels), its k/n in a colour that reads on it.
        << "plot $h" << k
        << " using 1:2:(0.5):(0.5):3 with boxxyerror fillstyle solid 1.0 noborder "
           "linecolor palette notitle, $h"
        << k
        << " using 1:2:($6 > 0 ? sprintf('%d/%d', $4, $5) : sprintf('%.1f/%d', $4, $5)):7 with "
           "labels font ',8' tc rgb variable notitle\n";
  }
  cmd << "unset multiplot\n";
  char size[48];
  std::snprintf(size, sizeof size, "%.0f,%.0f", width, height);
  s.emit(dir, stem, size, cmd.str());
}

}  // namespace

void needle_heatmaps(Script& s, const std::vector<json>& cells, const std::vector<TableRow>& rows,
                     const std::string& dir, const std::string& stem, const std::string& model) {
  // Tasks by name, each its own figure (pooling tasks would read one task's
  // failures as a depth's).
  std::set<std::string> tasks;
  for (const auto& c : cells) {
    const json& inst = c["instance"];
    if (inst.contains("depth") && inst["depth"].is_number()) tasks.insert(inst.value("task", ""));
  }
  size_t t = 0;
  for (const std::string& task : tasks)
    heatmap_of_task(s, cells, rows, dir, stem + "-task" + std::to_string(++t), model, task);
}

void needle_layers(Script& s, const std::vector<json>& cells, const std::vector<TableRow>& rows,
                   const std::string& dir, const std::vector<bool>& local_layers,
                   const std::string& stem, const std::string& model) {
  // label -> [held | attended] -> layer -> (sum, count)
  std::map<std::string, std::array<std::vector<std::pair<double, int>>, 2>> acc;
  std::set<std::string> labels;
  size_t layers = 0;
  for (const auto& c : cells) {
    if (!c.contains("needle_survival") || !c["needle_survival"].is_object()) continue;
    const json& ns = c["needle_survival"];
    const std::string name = c["policy"]["label"].get<std::string>();
    for (int which = 0; which < 2; ++which) {
      const json* src = which == 0 ? &ns : nullptr;
      if (which == 1 && ns.contains("attended") && ns["attended"].is_object())
        src = &ns["attended"];
      if (!src || !src->contains("per_layer") || !(*src)["per_layer"].is_array()) continue;
      const json& per_layer = (*src)["per_layer"];  // [layers], checked by check_cell
      auto& v = acc[name][which];
      if (v.size() < per_layer.size()) v.resize(per_layer.size());
      for (size_t l = 0; l < per_layer.size(); ++l)
        if (per_layer[l].is_number()) {
          v[l].first += per_layer[l].get<double>();
          v[l].second += 1;
        }
      layers = std::max(layers, per_layer.size());
      labels.insert(name);
    }
  }
  if (layers == 0) return;
  // Layer kinds only when they describe these cells' layers.
  const bool kinds = local_layers.size() == layers;
  const std::vector<std::string> order = in_table_order(rows, labels);
  const int n = static_cast<int>(order.size());
  size_t longest = 0;
  std::vector<std::string> shown;
  for (const auto& l : order) {
    shown.push_back(shorten(l, 34));
    longest = std::max(longest, std::min<size_t>(l.size(), 35));
  }
  // Two panels side by side; the left one carries the configuration names.
  // With layer kinds: a strip above the rows (row -1.25) shows each layer's
  // kind, global dark and local light, named in a key under the panels.
  const double names_px = 20 + 6.2 * static_cast<double>(std::max<size_t>(longest, 11));
  const double panel_px = std::clamp(120.0 + 14.0 * static_cast<double>(layers), 360.0, 700.0);
  const double title_px = 64, bottom_px = kinds ? 75 : 45, bar_px = 80;
  const double plot_h = std::max(140.0, 20.0 * (n + (kinds ? 1.5 : 0)));
  const double width = names_px + 2 * panel_px + bar_px, height = title_px + plot_h + bottom_px;

  std::ostringstream cmd;
  cmd << "unset grid\n" << kScorePalette;
  for (int which = 0; which < 2; ++which) {
    cmd << "$l" << which << " << EOD\n";
    for (int r = 0; r < n; ++r) {
      const auto& v = acc[order[r]][which];
      for (size_t l = 0; l < layers; ++l)
        cmd << l << " " << r << " "
            << (l < v.size() ? value_or_nan(v[l].first, v[l].second) : std::string("NaN")) << "\n";
    }
    cmd << "EOD\n";
  }
  if (kinds) {
    // Columns: layer, 1 for a global layer, 0 for a local one.
    cmd << "$kind << EOD\n";
    for (size_t l = 0; l < layers; ++l) cmd << l << " " << (local_layers[l] ? 0 : 1) << "\n";
    cmd << "EOD\n";
  }
  cmd << "set multiplot title "
      << (model.empty() ? std::string("'Needle survival per layer (mean over cells with a needle)'")
                        : label(shorten(model, 40) +
                                ": needle survival per layer (mean over cells with a needle)"))
      << " font ',11'\n";
  const double y_top = kinds ? -1.75 : -0.5;
  for (int which = 0; which < 2; ++which) {
    const double left = names_px + which * panel_px;
    char margins[320];
    std::snprintf(margins, sizeof margins,
                  "set lmargin at screen %.5f\nset rmargin at screen %.5f\nset tmargin at screen "
                  "%.5f\nset bmargin at screen %.5f\n",
                  left / width, (left + panel_px - 20) / width, 1.0 - title_px / height,
                  bottom_px / height);
    cmd << margins << "set title "
        << (which == 0 ? "'held (in any tier)'" : "'attended (at question time)'")
        << " font ',9'\nset xlabel 'layer' font ',9'\n"
        << "set xrange [-0.5:" << layers - 0.5 << "]\nset yrange [" << n - 0.5 << ":" << y_top
        << "]\n"
        << "set xtics 0, " << (layers > 40 ? 10 : 5) << " font ',8'\n";
    if (which == 0) {
      cmd << "set ytics font ',8' (";
      if (kinds) cmd << "'layer kind' -1.25, ";
      for (int r = 0; r < n; ++r) cmd << (r ? ", " : "") << tic_label(shown[r]) << " " << r;
      cmd << ")\n";
    } else {
      // The names are on the left panel: tics without labels here.
      cmd << "unset ytics\nset ytics 1 format ''\n";
    }
    cmd << (which == 1 ? colour_bar(width, height, title_px + 20, bottom_px) : "unset colorbox\n");
    if (kinds && which == 0)
      cmd << "set key at screen " << names_px / width << ", screen " << 28.0 / height
          << " left Left reverse horizontal maxrows 1 samplen 1.5 font ',9'\n";
    else
      cmd << "unset key\n";
    cmd << "plot $l" << which
        << " using 1:2:(0.5):(0.5):3 with boxxyerror fillstyle solid 1.0 noborder linecolor "
           "palette notitle";
    if (kinds)
      cmd << ", $kind using 1:(-1.25):(0.5):(0.4):($2 > 0 ? 0x222222 : 0xCCCCCC) with boxxyerror "
             "fillstyle solid 1.0 noborder linecolor rgb variable notitle"
          << (which == 0
                  ? ", NaN with boxes fillstyle solid 1.0 noborder lc rgb '#222222' title "
                    "'global layer (attends the whole context)', NaN with boxes fillstyle solid "
                    "1.0 noborder lc rgb '#CCCCCC' title 'local layer (sliding window)'"
                  : "");
    cmd << "\n";
  }
  cmd << "unset multiplot\n";
  char size[48];
  std::snprintf(size, sizeof size, "%.0f,%.0f", width, height);
  s.emit(dir, stem, size, cmd.str());
}

}  // namespace kvbench::plot
