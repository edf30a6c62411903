#include "tests/support/scratch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace kvbench::test {

std::string scratch_folder(const std::string& suite, const std::string& name) {
  const std::string d =
      testing::TempDir() + "kvbench-" + suite + "-" + std::to_string(::getpid()) + "/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace kvbench::test
