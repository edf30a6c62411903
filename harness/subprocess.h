// Child processes without a shell: the program is found on PATH and started
// directly (execve / posix_spawnp), its arguments passed as they are (no
// word splitting, no quoting, no shell metacharacters).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvbench {

// Runs argv[0] with `input` on its stdin. Returns the exit code, 127 when
// the program could not be started, 128 + N when killed by signal N.
// stdout and stderr go to /dev/null. The child never outlives kvbench: it
// is killed (SIGKILL) when the calling thread dies, a kill -9 included
// (PR_SET_PDEATHSIG), and by the SIGINT/SIGTERM handlers
// (model/common/temporaries.h). `inherit_fd` (when >= 0) stays open in the
// child: a run folder's lock descriptor, so that the lock lasts as long as
// gnuplot writes there, not just as long as kvbench lives.
int run_with_input(const std::vector<std::string>& argv, std::string_view input,
                   int inherit_fd = -1);

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
