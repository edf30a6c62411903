// Context lengths the task tests ask for, raised where a task cannot be that
// short with the tiny models' long spellings: cwe's list holds its 10 common
// words 6 times each (about 600 tokens), fwe's at least 64 coded-word draws
// (about 300). A shorter length is an error naming the task
// (Tasks.BadRequestsNameTheField).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

namespace kvbench::test {

inline int64_t fitting_length(const std::string& task, int64_t length) {
  if (task == "cwe") return std::max<int64_t>(length, 800);
  if (task == "fwe") return std::max<int64_t>(length, 400);
  return length;
}

}  // namespace kvbench::test
