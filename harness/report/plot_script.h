// The pieces every plot script shares: one gnuplot script draws every plot
// of a report, each as PNG then SVG; strings reach it only through
// gnuplot_string (plots.h), numbers only through data blocks.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace kvbench::plot {

// A label shown in enhanced-text mode as one gnuplot string literal: '_', '^'
// and the other markup characters would start sub/superscripts, so each is
// escaped.
std::string label(const std::string& s);

// A label in a `set xtics ("label" position, ...)` list: gnuplot reads it as
// a format for the position, so '%' is doubled on top of label().
std::string tic_label(const std::string& s);

// `name[1..n]` = the labels, as gnuplot statements: strings stay in commands
// (through gnuplot_string), data blocks hold numbers only.
std::string label_array(const std::string& name, const std::vector<std::string>& labels);

// "2k" for 2048, "8k" for 8000, "300" for 300.
std::string length_label(int64_t n);

// Series j of a figure: one of 8 colours (series_colour) and one of 16
// markers (series_point); series_style(j) turns to another marker and dash
// pattern every 8 series, so no two of the first 128 series look alike
// (gnuplot's default cycles 8 colours with one marker).
const char* series_colour(size_t j);
int series_point(size_t j);
std::string series_style(size_t j);

// At most max_chars characters of s (UTF-8 aware), "…" marking a cut.
std::string shorten(const std::string& s, size_t max_chars);

// The script being built and the files it will write.
struct Script {
  std::ostringstream body;
  std::vector<std::string> files;  // relative to the run folder
  // Draws `commands` twice, to plots/<stem>.png and plots/<stem>.svg, at
  // `size` ("900,600" pixels); gnuplot writes their temporaries
  // (plot_files.h), renamed into place by run_gnuplot.
  void emit(const std::string& dir, const std::string& stem, const std::string& size,
            const std::string& commands);
};

}  // namespace kvbench::plot
