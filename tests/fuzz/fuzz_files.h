// Shared by the fuzz targets whose readers take a path: a scratch path per
// process, the input written to it (aborts if it cannot, which is a harness
// failure, not a finding) and the check that a refusal names the file.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace kvbench::fuzz {

// /dev/shm/<target>-<pid><suffix>: a RAM disk, since every input is written
// there; one per process, so parallel fuzzing jobs never share one.
inline std::string scratch_path(const std::string& target, const std::string& suffix = "") {
  return "/dev/shm/" + target + "-" + std::to_string(::getpid()) + suffix;
}

// The fuzzer's input bytes as a string.
inline std::string input_text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

inline void write_file(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

// Every refusal of a file starts with the file's path; abort when `message`
// does not.
inline void expect_names_file(const std::string& message, const std::string& path) {
  if (message.rfind(path, 0) != 0) std::abort();
}

}  // namespace kvbench::fuzz
