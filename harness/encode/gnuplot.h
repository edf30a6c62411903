// The gnuplot sink: every string a plot script holds goes through
// gnuplot_string, so nothing a label or a path holds can end the literal,
// start a command or expand a macro.
#pragma once

#include <string>

namespace kvbench {

// `s` as a gnuplot string literal that stays one literal whatever it holds:
// single-quoted (no escapes, no `command` substitution, no @macros), quotes
// doubled, newlines and other control characters written as visible escapes
// (\n, \x01). Every string in every plot script goes through it.
std::string gnuplot_string(const std::string& s);

}  // namespace kvbench
