// Scratch folders and whole-file reads for the tests that write files: one
// folder per suite and test process, so parallel ctest processes never share
// one (temp_cleanup.cpp removes them at exit).
#pragma once

#include <string>

namespace kvbench::test {

// An empty folder <TempDir>/kvbench-<suite>-<pid>/<name> (removed first).
std::string scratch_folder(const std::string& suite, const std::string& name);

// A file's bytes ("" when it cannot be read).
std::string slurp(const std::string& path);

}  // namespace kvbench::test
