// Names of the enumerators of an enum numbered 0, 1, ..., Last, looked up in
// one table instead of a switch per enum.
#pragma once

#include <cstddef>
#include <string_view>

namespace kvbench {

// The table's size is deduced from its initialiser and checked against Last,
// so a name missing or left over fails to compile. `fallback` answers values
// outside the enumerators (an enum read from a file may hold any number).
template <auto Last, std::size_t N>
constexpr std::string_view enum_name(decltype(Last) value, const std::string_view (&names)[N],
                                     std::string_view fallback) {
  static_assert(N == static_cast<std::size_t>(Last) + 1, "one name per enumerator, 0 to Last");
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : fallback;
}

}  // namespace kvbench
