// What every hostile-input test needs: a scratch folder per test process, a
// tiny experiment on the tests' tiny model and a finished run folder of it,
// and snapshots of a folder's files (to show that nothing was written).
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/scratch.h"  // slurp

namespace kvbench::test {

// An empty folder <TempDir>/kvbench-hostile-<pid>/<name> (removed first).
std::string scratch(const std::string& name);

// A one-instance experiment on the tiny model (two cells: full and a
// 64-token window labelled "win"), written to <dir>/tiny.json; `extra` is
// JSON text appended inside the top-level object (", \"key\": value").
std::string tiny_experiment(const std::string& dir, const std::string& extra = "");

// A finished run folder of tiny_experiment under <dir>/out (its path).
std::string tiny_run(const std::string& dir);

// Every entry under `dir` (relative path -> content, "<dir>" for folders).
std::map<std::string, std::string> tree(const std::string& dir);

// Compares two tree() snapshots, naming only the paths that differ (the
// files themselves can be megabytes).
::testing::AssertionResult same_tree(const std::map<std::string, std::string>& before,
                                     const std::map<std::string, std::string>& after);

// The files of <run>/cells, sorted.
std::vector<std::string> cell_files(const std::string& run);

// `kvbench args` started in the background (the binary under test), for the
// tests that stop, kill or signal it: stdout to /dev/null, stderr to
// `stderr_path` (created or truncated), and `path_first` ahead of $PATH when
// not empty. Its pid; the caller reaps it.
pid_t spawn_kvbench(const std::vector<std::string>& args,
                    const std::string& stderr_path = "/dev/null",
                    const std::string& path_first = "");

}  // namespace kvbench::test
