// `kvbench history plot`: the trend as one figure (PNG or SVG by the output's
// extension), small multiples: a panel per series (trend.h), in a column per
// (experiment, task) and a row per configuration (and model), each drawing
// its score over the commits in history order (x: commit, labelled with its
// short id and date under each column's lowest panel, with an axis title)
// with 95% interval bars, each regression point (trend.h) circled in red.
// One series per panel: no series hides another at 0 or 1, and the score
// axis runs past both so points there stay clear of the border. Drawn by
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
