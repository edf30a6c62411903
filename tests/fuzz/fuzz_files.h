// Shared by the fuzz targets whose readers take a path: writes the input to
// a scratch file (aborts if it cannot, which is a harness failure, not a finding).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kvbench::fuzz {

inline void write_file(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

}  // namespace kvbench::fuzz
