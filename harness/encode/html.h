// The HTML sink: every string that reaches report.html or predictions.html
// goes through html_escape (labels, model output and descriptions come from
// run folders that others write).
#pragma once

#include <string>

namespace kvbench {

// Text and attribute values alike: & < > " ' become entities; line breaks
// stay (model output is shown as it came, in a <pre> or white-space: pre),
// every other character a browser would act on or hide (C0 and C1
// controls, a NUL, bidi overrides that reorder what is shown, invalid
// UTF-8) becomes the terminal's visible escape (\x01, \u202e:
// escaped_text, model/common/printable.h; backslashes stay single).
std::string html_escape(const std::string& s);

}  // namespace kvbench
