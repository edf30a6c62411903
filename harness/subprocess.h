// Child processes without a shell: the program is found on PATH and started
// with posix_spawnp, its arguments passed as they are (no word splitting, no
// quoting, no shell metacharacters).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvbench {

// Runs argv[0] with `input` on its stdin. Returns the exit code, 127 when
// the program could not be started, 128 + N when killed by signal N.
// stdout and stderr go to /dev/null.
int run_with_input(const std::vector<std::string>& argv, std::string_view input);

struct Captured {
  int code = 127;       // as run_with_input's
  int spawn_error = 0;  // the errno of a program that could not be started (ENOENT: not found)
  std::string out;      // stdout, at most max_bytes (the rest is read and dropped)
  std::string err;      // stderr, likewise
};

// Runs argv[0] with stdin from /dev/null, in `dir` when not empty, and
// returns its exit code and output. A child that prints more than max_bytes
// on a stream is not blocked: the excess is read and dropped.
Captured run_capture(const std::vector<std::string>& argv, const std::string& dir = "",
                     size_t max_bytes = size_t{1} << 16);

}  // namespace kvbench
