// Runs the kvbench binary as a user does (KVBENCH_BINARY, set by CMake) and
// captures its exit code, stdout and stderr; checks the CLI's error contract.
#pragma once

#include <string>

namespace kvbench::test {

struct CliResult {
  std::string args;  // as given, for failure messages
  int code = -1;     // exit code; -1 when killed by a signal
  std::string out, err;
};

// The kvbench binary the CLI tests run: KVBENCH_TEST_BINARY when set (an
// older build, to show a test fails there), else the one CMake built.
std::string binary_under_test();

// `kvbench <args>` through the shell (args may quote and redirect stdin).
// stderr goes to a file named by this process's id, so parallel test
// processes never read each other's output.
CliResult run_kvbench(const std::string& args);
// The same in working directory `dir` (a path without a single quote).
CliResult run_kvbench_in(const std::string& dir, const std::string& args);

// The contract for bad input: exit 2, nothing on stdout, exactly one line
// on stderr starting "error: " and containing `contains`.
void expect_input_error(const CliResult& r, const std::string& contains);

}  // namespace kvbench::test
