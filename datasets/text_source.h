// Plain text from files that Debian packages install (never downloaded at run
// time): whole files or line ranges, transparently gunzipped.
#pragma once

#include <string>

namespace kvbench {

// Lines [first, last] (1-based, inclusive) of a text file, ".gz" decompressed;
// each line keeps its '\n'. last = 0 means to the end. Throws InputError
// naming the file when it is missing, unreadable or shorter than `first`.
std::string read_text_lines(const std::string& path, int64_t first = 1, int64_t last = 0);

}  // namespace kvbench
