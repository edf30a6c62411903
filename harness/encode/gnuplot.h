// The gnuplot sink: every string a plot script holds goes through
// gnuplot_string, so nothing a label or a path holds can end the literal,
// start a command or expand a macro; every output file through
// gnuplot_output, so no path opens a pipe.
#pragma once

#include <string>

namespace kvbench {

// `s` as a gnuplot string expression that stays one string whatever it
// holds: single-quoted (no escapes, no `command` substitution, no @macros),
// quotes doubled, leading quotes as "''" . '...' (gnuplot misreads a literal
// that begins with a doubled quote); control characters, C1 and bidi
// controls and invalid UTF-8 written as the terminal's visible escapes (\n,
// \x01, \u202e). Every string in every plot script goes through it.
std::string gnuplot_string(const std::string& s);

// The argument of `set output` for the file at `path`: gnuplot reads a name
// that begins with '|' as a shell command to pipe the plot to, and expands
// a leading '~', so the path is made absolute first (it then begins with
// '/'), then quoted by gnuplot_string. InputError naming the path when it
// holds a control character (a single-quoted gnuplot string has no escapes:
// the visible escape would name another file) or is not valid UTF-8.
std::string gnuplot_output(const std::string& path);

}  // namespace kvbench
