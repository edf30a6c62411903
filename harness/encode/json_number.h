// The JSON sink's numbers: JSON has no NaN or infinity, so a statistic that
// is undefined (an empty group's mean, a test with no differing pair) is
// written as null, and every reader of kvbench's JSON expects null there.
#pragma once

#include <cmath>

#include <nlohmann/json.hpp>

namespace kvbench {

inline nlohmann::json json_number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace kvbench
