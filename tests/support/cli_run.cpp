#include "tests/support/cli_run.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace kvbench::test {

std::string binary_under_test() {
  const char* other = std::getenv("KVBENCH_TEST_BINARY");
  return other && *other ? other : KVBENCH_BINARY;
}

CliResult run_kvbench(const std::string& args) { return run_kvbench_in("", args); }

CliResult run_kvbench_in(const std::string& dir, const std::string& args) {
  const std::string err_path =
      testing::TempDir() + "kvbench-cli-stderr-" + std::to_string(::getpid()) + ".txt";
  CliResult r;
  r.args = args;
  const std::string cd = dir.empty() ? "" : "cd '" + dir + "' && ";
  FILE* p = popen((cd + binary_under_test() + " " + args + " 2>" + err_path).c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_path);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  return r;
}

void expect_input_error(const CliResult& r, const std::string& contains) {
  SCOPED_TRACE("kvbench " + r.args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(contains), std::string::npos) << r.err;
}

}  // namespace kvbench::test
