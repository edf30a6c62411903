#include "tests/hostile/hostile_support.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/support/cli_run.h"
#include "tests/support/reference_llama.h"

namespace kvbench::test {

namespace fs = std::filesystem;

std::string scratch(const std::string& name) { return scratch_folder("hostile", name); }

std::string tiny_experiment(const std::string& dir, const std::string& extra) {
  const std::string path = dir + "/tiny.json";
  std::ofstream(path) << R"({"name": "tiny", "model": ")" << tiny_model_path()
                      << R"(", "threads": 1,
    "tasks": [{"task": "passkey", "lengths": [128]}],
    "policies": ["full", {"spec": "window:budget=64", "label": "win"}],
    "decoding": {"chunk": 64, "max_new_tokens": 2})"
                      << extra << "}";
  return path;
}

std::string tiny_run(const std::string& dir) {
  const auto r = run_kvbench("run " + tiny_experiment(dir) + " -q --out " + dir + "/out");
  EXPECT_EQ(r.code, 0) << r.err;
  for (const auto& e : fs::directory_iterator(dir + "/out")) return e.path().string();
  return "";
}

std::map<std::string, std::string> tree(const std::string& dir) {
  std::map<std::string, std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out[fs::relative(e.path(), dir).string()] =
        e.is_regular_file() ? slurp(e.path().string()) : "<dir>";
  return out;
}

::testing::AssertionResult same_tree(const std::map<std::string, std::string>& before,
                                     const std::map<std::string, std::string>& after) {
  std::string diff;
  for (const auto& [path, bytes] : before) {
    const auto it = after.find(path);
    if (it == after.end())
      diff += "\n  removed: " + path;
    else if (it->second != bytes)
      diff += "\n  changed: " + path;
  }
  for (const auto& [path, bytes] : after)
    if (!before.count(path)) diff += "\n  added: " + path;
  if (diff.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the tree changed:" << diff;
}

std::vector<std::string> cell_files(const std::string& run) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(run + "/cells")) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

pid_t spawn_kvbench(const std::vector<std::string>& args, const std::string& stderr_path,
                    const std::string& path_first) {
  // Everything the child needs is made before the fork.
  const std::string binary = binary_under_test();
  std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const char* path = std::getenv("PATH");
  const std::string search = path_first + ":" + (path ? path : "");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(::open("/dev/null", O_WRONLY), STDOUT_FILENO);
    ::dup2(::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666), STDERR_FILENO);
    if (!path_first.empty()) ::setenv("PATH", search.c_str(), 1);
    ::execv(binary.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

}  // namespace kvbench::test
