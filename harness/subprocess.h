// Child processes without a shell: the program is found on PATH and started
// with posix_spawnp, its arguments passed as they are (no word splitting, no
// quoting, no shell metacharacters), stdout and stderr sent to /dev/null.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvbench {

// Runs argv[0] with `input` on its stdin. Returns the exit code, 127 when
// the program could not be started, 128 + N when killed by signal N.
int run_with_input(const std::vector<std::string>& argv, std::string_view input);

}  // namespace kvbench
