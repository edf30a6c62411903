// HTML output of the report pages. Every string that reaches report.html or
// predictions.html goes through html_escape: labels, model output and
// descriptions come from run folders that others write.
#pragma once

#include <functional>
#include <string>

#include "harness/encode/html.h"

namespace kvbench {

// One of our markdown tables (a header row, a |---| rule, body rows) as an
// HTML table, rendered by md4c with raw HTML off (every cell's text comes
// out escaped). link(i), for body row i (0-based), returns an href for that
// row's first cell, or "" for none (an href md4c could not take whole, with
// '<', '>', a backslash or a control character, gives no link).
std::string markdown_table_to_html(const std::string& md,
                                   const std::function<std::string(int)>& link = {});

// The anchor of a cell's entry in predictions.html: "cell-<id>" (cell ids are
// safe file names, checked by check_cell, so the anchor needs no encoding
// beyond html_escape).
std::string cell_anchor(const std::string& cell_id);

}  // namespace kvbench
