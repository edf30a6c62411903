// The shell sink: every path in the job scripts `kvbench submit` hands to
// sbatch (run under sh) goes through shell_quote.
#pragma once

#include <string>
#include <string_view>

namespace kvbench {

// `text` as one sh word: inside single quotes, each ' written as '\''.
// Every byte but ' is literal there, newlines included; a NUL (which no
// shell word can hold) is an InputError naming the text.
std::string shell_quote(std::string_view text);

}  // namespace kvbench
