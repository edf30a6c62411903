#include "harness/report/plot_style.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/report/curve_stats.h"
#include "harness/report/plot_script.h"
#include "harness/report/stats.h"

namespace kvbench::plot {
namespace {

// Okabe & Ito's palette without black (the full cache's), in their order
// but yellow last: it is the faintest on white.
constexpr const char* kColours[] = {"#E69F00", "#56B4E9", "#009E73", "#0072B2",
                                    "#D55E00", "#CC79A7", "#F0E442"};
constexpr size_t kNColours = sizeof kColours / sizeof kColours[0];
// gnuplot's filled circle, square, triangle, inverted triangle, diamond,
// pentagon, then the hollow ones in the same order (and a plus).
constexpr int kFilled[] = {7, 5, 9, 11, 13, 15, 1};
constexpr int kHollow[] = {6, 4, 8, 10, 12, 14, 2};

}  // namespace

const char* family_colour(size_t j) { return kColours[j % kNColours]; }

std::string family_style(size_t j) {
  const size_t round = j / kNColours;
  const int point = round % 2 == 0 ? kFilled[j % kNColours] : kHollow[j % kNColours];
  return std::string("lc rgb '") + family_colour(j) + "' pt " + std::to_string(point) + " dt " +
         std::to_string(round % 5 + 1);
}

Interval3 interval_of(const std::vector<double>& scores) {
  const stats::Estimate e = stats::estimate_mean(scores);
  return {e.mean, std::isnan(e.ci.lo) ? e.mean : e.ci.lo, std::isnan(e.ci.hi) ? e.mean : e.ci.hi};
}

std::string full_cache_clauses(std::ostream& data, int& block, double x0, double x1,
                               const Interval3& full) {
  const std::string b = "$b" + std::to_string(block++);
  data << b << " << EOD\n"
       << x0 << " " << full.mean << " " << full.lo << " " << full.hi << "\n"
       << x1 << " " << full.mean << " " << full.lo << " " << full.hi << "\nEOD\n";
  return b +
         " using 1:3:4 with filledcurves fc rgb '#000000' fs transparent solid 0.12 noborder "
         "notitle, " +
         b + " using 1:2 with lines dt 2 lw 2 lc rgb '#000000' notitle";
}

PanelGrid panel_grid(double pw, double ph, size_t columns, size_t rows, size_t legend_entries) {
  const double legend = 280, top = 40;
  const double legend_h = 15.0 * static_cast<double>(legend_entries + 1) + 40;
  return {pw,
          ph,
          legend,
          top,
          pw * static_cast<double>(columns) + legend,
          std::max(ph * static_cast<double>(rows), legend_h) + top,
          columns};
}

// An empty plot at screen [x, x + w] x [0, h] (fractions of the figure)
// whose series are the full cache (when `full`) and the families in `names`.
// Leaves border, tics and grid unset for the caller to restore.
static std::string legend_panel(double x, double w, double h, const std::vector<std::string>& names,
                                const std::vector<size_t>& styles, bool full) {
  std::ostringstream cmd;
  char place[120];
  std::snprintf(place, sizeof place, "set origin %.5f, 0\nset size %.5f, %.5f\n", x, w, h);
  cmd << place << "unset title\nunset xlabel\nunset ylabel\nunset border\nunset tics\nunset grid\n"
      << "unset logscale\nunset colorbox\nunset label\nunset arrow\n"
      << "set key top left Left reverse samplen 2.5 spacing 1.0 font ',9' maxcols 1\n"
      << "set xrange [0:1]\nset yrange [0:1]\nplot ";
  std::string sep;
  if (full) {
    cmd << "NaN with lines dt 2 lw 2 lc rgb '#000000' title 'Full cache (band: 95% interval)'";
    sep = ", ";
  }
  for (size_t j = 0; j < names.size(); ++j) {
    cmd << sep << "NaN with linespoints lw 1.5 " << family_style(styles.at(j)) << " title "
        << label(shorten(names[j], 28));
    sep = ", ";
  }
  if (sep.empty()) cmd << "NaN notitle";
  cmd << "\n";
  return cmd.str();
}

std::string PanelGrid::place(size_t r, size_t c) const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "set origin %.5f, %.5f\nset size %.5f, %.5f\n",
                pw * static_cast<double>(c) / width,
                (height - top - ph * static_cast<double>(r + 1)) / height, pw / width, ph / height);
  return buf;
}

std::string PanelGrid::legend_and_close(const std::vector<std::string>& names,
                                        const std::vector<size_t>& styles) const {
  return legend_panel(pw * static_cast<double>(columns) / width, legend / width,
                      (height - top) / height, names, styles, true) +
         "unset multiplot\nset border\nset tics\nset grid\n";
}

std::string PanelGrid::size() const {
  return std::to_string(static_cast<int>(width)) + "," + std::to_string(static_cast<int>(height));
}

std::map<std::string, size_t> family_styles(const std::vector<PlotModel>& models) {
  std::map<std::string, std::pair<int64_t, size_t>> first;  // family -> (index, appearance)
  for (const PlotModel& m : models)
    for (const nlohmann::json& c : *m.cells) {
      const nlohmann::json& p = c["policy"];
      if (p.value("is_reference", false)) continue;
      const int64_t index = p.value("index", int64_t{0});
      const auto [it, fresh] = first.emplace(policy_family(p.value("label", std::string())),
                                             std::pair{index, first.size()});
      if (!fresh) it->second.first = std::min(it->second.first, index);
    }
  std::vector<std::pair<std::pair<int64_t, size_t>, std::string>> order;
  for (const auto& [family, key] : first) order.push_back({key, family});
  std::sort(order.begin(), order.end());
  std::map<std::string, size_t> styles;
  for (size_t j = 0; j < order.size(); ++j) styles[order[j].second] = j;
  return styles;
}

void dodge(std::vector<double>& xs, const std::vector<size_t>& families, double step, bool log) {
  std::vector<size_t> order(xs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return xs[a] != xs[b] ? xs[a] < xs[b] : families[a] < families[b];
  });
  const std::vector<double> at = xs;
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin + 1;
    while (end < order.size() && std::abs(at[order[end]] - at[order[begin]]) <=
                                     0.01 * std::max(std::abs(at[order[begin]]), 1e-9))
      ++end;
    const double centre = static_cast<double>(end - begin - 1) / 2;
    for (size_t i = begin; i < end; ++i) {
      const double k = (static_cast<double>(i - begin) - centre) * step;
      xs[order[i]] = log ? at[order[i]] * std::exp(k) : at[order[i]] + k;
    }
    begin = end;
  }
}

// viridis at nine evenly spaced points (van der Walt & Smith's colormap, as
// R's viridis(9) gives it).
const char* const kScorePalette =
    "set palette defined (0 '#440154', 0.125 '#472D7B', 0.25 '#3B528B', 0.375 '#2C728E', "
    "0.5 '#21908C', 0.625 '#27AD81', 0.75 '#5DC863', 0.875 '#AADC32', 1 '#FDE725')\n"
    "set cbrange [0:1]\n";

int text_rgb_on(double v) { return v < 0.55 ? 0xFFFFFF : 0x000000; }

}  // namespace kvbench::plot
