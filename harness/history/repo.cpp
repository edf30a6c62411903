#include "harness/history/repo.h"

#include <filesystem>
#include <system_error>

#include "harness/subprocess.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench::history {
namespace {

// Whether git sees a work tree or a repository at `dir` (no shell; the
// path is one argument, never an option: it follows -C).
bool is_git_repository(const std::string& dir) {
  return run_capture({"git", "-C", dir, "rev-parse", "--git-dir"}, "", 4096).code == 0;
}

}  // namespace

std::string default_repo() { return is_git_repository(".") ? "." : ""; }

std::string checked_repo(const std::string& repo) {
  if (repo.empty()) return repo;
  const std::string where = "--repo " + escaped_text(repo, 512) + ": ";
  std::error_code ec;
  const auto status = std::filesystem::status(repo, ec);
  if (!std::filesystem::exists(status)) throw InputError(where + "no such directory");
  if (!std::filesystem::is_directory(status)) throw InputError(where + "not a directory");
  const Captured git = run_capture({"git", "-C", repo, "rev-parse", "--git-dir"}, "", 4096);
  if (git.spawn_error) throw InputError(where + "git could not be started (is git installed?)");
  if (git.code != 0)
    throw InputError(where + "not a git repository (\"\" to not ask git for commit dates)");
  return repo;
}

}  // namespace kvbench::history
