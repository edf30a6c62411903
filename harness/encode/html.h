// The HTML sink: every string that reaches report.html or predictions.html
// goes through html_escape (labels, model output and descriptions come from
// run folders that others write).
#pragma once

#include <string>

namespace kvbench {

// Text and attribute values alike: & < > " ' become entities.
std::string html_escape(const std::string& s);

}  // namespace kvbench
