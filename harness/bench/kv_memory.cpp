#include "harness/bench/kv_memory.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "model/common/error.h"

namespace kvbench {

uint64_t parse_byte_size(const std::string& text, const std::string& what) {
  auto bad = [&] {
    return InputError(what + ": '" + text +
                      "' is not a byte count (e.g. 1073741824, 512M, 1G; binary units)");
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  const std::string number = text.substr(0, i);
  std::string unit = text.substr(i);
  if (number.empty() || number.front() == '.' || number.back() == '.' ||
      std::count(number.begin(), number.end(), '.') > 1 || number.size() > 20)
    throw bad();
  // "GiB" and "GB" both mean G (binary units throughout).
  if (unit.size() == 3 && unit.ends_with("iB"))
    unit.resize(1);
  else if (unit.size() == 2 && unit.back() == 'B')
    unit.resize(1);
  double scale = 1;
  if (unit == "K")
    scale = 1024.0;
  else if (unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty() && unit != "B")
    throw bad();
  const double bytes = std::floor(std::stod(number) * scale);
  if (!(bytes >= 1) || bytes > std::ldexp(1.0, 50))
    throw InputError(what + ": '" + text + "' must be between 1 byte and 1 PiB");
  return static_cast<uint64_t>(bytes);
}

int batch_for_memory(uint64_t cap, uint64_t per_sequence, int max_batch) {
  if (per_sequence == 0) return max_batch;
  return static_cast<int>(std::min<uint64_t>(cap / per_sequence, static_cast<uint64_t>(max_batch)));
}

uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  // "MemAvailable:   23456789 kB"; a few dozen short lines, read at most 200.
  for (int i = 0; i < 200 && std::getline(in, line); ++i) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream ss(line.substr(13));
    uint64_t kib = 0;
    std::string unit;
    if (ss >> kib >> unit && unit == "kB" && kib < (uint64_t{1} << 50)) return kib * 1024;
    return 0;
  }
  return 0;
}

void check_batch_memory(const std::string& test, int batch, uint64_t per_sequence,
                        uint64_t available) {
  if (available == 0 || batch <= 1) return;
  const double need = static_cast<double>(per_sequence) * batch;
  if (need <= static_cast<double>(available)) return;
  throw InputError(test + ": " + std::to_string(batch) + " sequences need about " +
                   format_bytes(static_cast<uint64_t>(std::min(need, 0x1p62))) + " (" +
                   format_bytes(per_sequence) + " each: K/V and logits), more than the " +
                   format_bytes(available) + " this machine has available");
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf,
                  v >= 100  ? "%.0f %s"
                  : v >= 10 ? "%.1f %s"
                            : "%.2f %s",
                  v, units[u]);
  return buf;
}

}  // namespace kvbench
