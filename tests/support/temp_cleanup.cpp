// Every test process leaves /tmp as it found it: at exit, the files and
// folders it made there (the tiny models, run folders, CLI outputs, all named
// "<prefix>-<pid>" or "<prefix>-<pid>.<ext>") are removed. ctest runs each
// test case as its own process, so one process never removes another's files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace kvbench::test {
namespace {

namespace fs = std::filesystem;

// Whether `name` is one of this process's: a known prefix, then "-<pid>",
// then nothing or an extension.
bool ours(const std::string& name, const std::string& pid) {
  static const char* const kPrefixes[] = {"kvbench-", "cli-", "bad-", "run-stderr-"};
  bool known = false;
  for (const char* p : kPrefixes) known = known || name.rfind(p, 0) == 0;
  if (!known) return false;
  const std::string tag = "-" + pid;
  const size_t at = name.rfind(tag);
  if (at == std::string::npos) return false;
  const size_t end = at + tag.size();
  return end == name.size() || name[end] == '.';
}

class TempCleanup final : public ::testing::Environment {
 public:
  void TearDown() override {
    const std::string pid = std::to_string(getpid());
    std::error_code ec;
    for (fs::directory_iterator it("/tmp", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!ours(name, pid)) continue;
      std::error_code rm;
      fs::remove_all(it->path(), rm);  // best effort: a leftover is not a test failure
    }
  }
};

[[maybe_unused]] ::testing::Environment* const kCleanup =
    ::testing::AddGlobalTestEnvironment(new TempCleanup);

}  // namespace
}  // namespace kvbench::test
