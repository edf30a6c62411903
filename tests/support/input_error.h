// The tests of an error message compare what an InputError says; this gets
// it from any call.
#pragma once

#include <string>

#include "model/common/error.h"

namespace kvbench::test {

// The message of the InputError f() throws, or `none` when it throws none.
template <class F>
std::string input_error_of(F&& f, const std::string& none = "(no error)") {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return none;
}

}  // namespace kvbench::test
