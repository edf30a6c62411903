// Regression gate: compares the cells of two run folders by cell id.
// Per configuration (policy label) and task, the mean score of NEW must not
// fall below BASE's by more than the tolerance; cells of BASE missing from
// NEW are a failure too (coverage regressed). Every cell whose score changed
// is listed.
#pragma once

#include <string>

namespace kvbench {

struct CompareResult {
  bool regressed = false;
  std::string report;  // the diff tables, markdown
};

CompareResult compare_runs(const std::string& base_dir, const std::string& new_dir,
                           double tolerance);

}  // namespace kvbench
