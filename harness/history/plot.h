// `kvbench history plot`: the trend as one figure (PNG or SVG by the output's
// extension), asv-style: per experiment and task a panel, per configuration
// a line of its score over the commits in history order with 95% interval
// bars (configurations side by side at each commit so the bars stay
// apart), and each regression point (trend.h) circled in red. Drawn by
// gnuplot through a pipe (no shell); every string from the database reaches
// the script through plot::label / plot::tic_label (harness/report/plot_script.h)
// or gnuplot_string (harness/encode/gnuplot.h), so no label can end a
// string, start a command or a macro; the output path through
// gnuplot_output, so it cannot open a pipe.
#pragma once

#include <string>

#include "harness/history/trend.h"

namespace kvbench::history {

// The gnuplot script that draws `trend` for `output_file` (a .png or .svg),
// into its temporary (plot_temporary, harness/report/plot_files.h).
std::string plot_script(const Trend& trend, const std::string& output_file);

// Writes the plot to `out` (.png or .svg) atomically: gnuplot writes a
// temporary beside it that is renamed over `out` once complete. InputError
// for another extension, nothing to plot, or gnuplot missing or failing.
void write_trend_plot(const Trend& trend, const std::string& out);

}  // namespace kvbench::history
