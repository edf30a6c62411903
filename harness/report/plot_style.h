// The house style of the report's figures, shared by every faceted figure
// (score vs ratio, score vs memory, score vs budget) and the heatmaps:
//   - policy families told apart by colour AND marker, the colours from
//     Okabe & Ito's palette (readable by colour-blind readers), one style
//     per family in every figure (family_styles), named in a legend panel
//     beside the facets, never on the points;
//   - the full cache as a black dashed line with its 95% interval as a grey
//     band;
//   - heatmaps on viridis (perceptually uniform, colour-blind safe, readable
//     in grey), fixed to [0, 1].
// Strings reach the script only through label() (plot_script.h); numbers only
// through data blocks and formatted numbers.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "harness/report/plots.h"

namespace kvbench::plot {

// Family j's line colour, marker and dash: colour j % 7 of Okabe-Ito (black
// is the full cache's; yellow, faint on white, last), marker j % 7 of seven filled shapes (so two
// families on one point stay apart by shape as well as colour), and past every seventh family the
// hollow shapes and another dash pattern. No two of the first 70 families look alike.
std::string family_style(size_t j);
const char* family_colour(size_t j);

// The style index (family_style) of every policy family (policy_family of
// a label, curve_stats.h) among the models' non-reference cells: families in
// the config's order (their first configuration's policy.index, then first
// appearance), so a family keeps one colour and marker in every figure.
std::map<std::string, size_t> family_styles(const std::vector<PlotModel>& models);

// A mean with its 95% interval (stats::estimate_mean); the mean itself for a
// missing bound (one fractional score).
struct Interval3 {
  double mean = 0, lo = 0, hi = 0;
};
Interval3 interval_of(const std::vector<double>& scores);

// The full cache's line across [x0, x1]: writes data block $b<block> to
// `data` (block is advanced) and returns the plot clauses (band, then dashed
// line, both without a title).
std::string full_cache_clauses(std::ostream& data, int& block, double x0, double x1,
                               const Interval3& full);

// A figure of rows x columns panels of pw x ph pixels, a legend column of
// `legend` pixels on the right as tall as its entries need (about 15 pixels
// each at its font, plus the full cache's line and a margin), and `top`
// pixels for the title line.
struct PanelGrid {
  double pw, ph, legend, top, width, height;
  size_t columns;

  // The placement of panel (row r, column c): "set origin ...\nset size ...\n".
  std::string place(size_t r, size_t c) const;
  // The legend panel right of the panels, whose series are the full cache
  // and the families in `names` (names[j] drawn in family_style(styles[j])),
  // then the multiplot closed and border, tics and grid restored.
  std::string legend_and_close(const std::vector<std::string>& names,
                               const std::vector<size_t>& styles) const;
  // The figure's size in pixels for the terminal: "W,H".
  std::string size() const;
};
PanelGrid panel_grid(double pw, double ph, size_t columns, size_t rows, size_t legend_entries);

// Points of several families at one x (two policies at one memory or
// budget) would hide one another: `xs[i]` of family `families[i]` moved
// apart, the points of each cluster (x within 1% of each other) set side
// by side in family order, `step` apart (a factor e^step on a log axis
// when `log`, else added), centred on their x.
void dodge(std::vector<double>& xs, const std::vector<size_t>& families, double step, bool log);

// The viridis palette fixed to [0, 1] (scores), as gnuplot commands.
extern const char* const kScorePalette;
// A text colour (0xRRGGBB, for `tc rgb variable`) that reads on the
// palette's colour for `v` in [0, 1]: white on the dark (low) half, black
// on the light half.
int text_rgb_on(double v);

}  // namespace kvbench::plot
