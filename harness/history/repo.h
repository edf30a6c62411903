// The git repository `history add` (and `run --history`) asks for each
// commit's date (add.h). Never a path fixed when kvbench was built: the
// binary may run anywhere, and its help must not show the build machine's
// directories.
#pragma once

#include <string>

namespace kvbench::history {

// The default: "." when the current directory is inside a git repository
// (git finds it from here, as `git log` would), "" otherwise (no dates from
// git: each run's start time orders its commit).
std::string default_repo();

// A --repo the user gave, checked before anything is written: "" stays ""
// (do not ask git); a path that does not exist, is not a directory or is
// not inside a git repository is an InputError "--repo <path>: ...".
std::string checked_repo(const std::string& repo);

}  // namespace kvbench::history
