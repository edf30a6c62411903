// kvbench::InputError — the one exception type for bad input from outside the
// program (files, configs, CLI values, snapshots). The CLI prints its message as
// "error: <what>" and exits with code 2. Internal invariants use assert instead.
#pragma once

#include <stdexcept>
#include <string>

namespace kvbench {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace kvbench
