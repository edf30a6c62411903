#include "harness/report/plot_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness/subprocess.h"
#include "model/common/atomic_file.h"
#include "model/common/error.h"
#include "model/common/printable.h"
#include "model/common/temporaries.h"

namespace kvbench {
namespace {

// The temporaries of one gnuplot run: created, registered for the signal
// handlers, and removed unless renamed into place.
class Temporaries {
 public:
  explicit Temporaries(const std::vector<std::string>& targets) {
    for (const auto& target : targets) {
      refuse_non_regular_target(target);
      remove_stale_temporaries(target);
      const std::string tmp = plot_temporary(target);
      // A leftover at this name (this pid's, or planted) is removed, never
      // written through.
      ::unlink(tmp.c_str());
      // Registered before it exists, so that no signal can come between its
      // creation and its registration.
      const int slot = register_temporary(tmp);
      const int fd =
          ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0) {
        const int err = errno;
        forget_temporary(slot);
        throw InputError(escaped_text(target, 512) + ": cannot create (" + std::strerror(err) +
                         ")");
      }
      ::close(fd);
      paths_.push_back(tmp);
      slots_.push_back(slot);
    }
  }
  ~Temporaries() {
    for (size_t i = 0; i < paths_.size(); ++i) {
      if (!paths_[i].empty()) ::unlink(paths_[i].c_str());
      forget_temporary(slots_[i]);
    }
  }
  Temporaries(const Temporaries&) = delete;
  Temporaries& operator=(const Temporaries&) = delete;

  // Renames temporary i over `target` when gnuplot wrote something there.
  bool publish(size_t i, const std::string& target) {
    struct stat st {};
    if (::lstat(paths_[i].c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
      return false;
    if (::rename(paths_[i].c_str(), target.c_str()) != 0) return false;
    paths_[i].clear();
    forget_temporary(slots_[i]);
    slots_[i] = -1;
    return true;
  }

 private:
  std::vector<std::string> paths_;
  std::vector<int> slots_;
};

}  // namespace

std::string plot_temporary(const std::string& target) {
  return target + ".tmp." + std::to_string(::getpid());
}

PlotRun run_gnuplot(const std::vector<std::string>& targets, const std::string& script,
                    int inherit_fd) {
  PlotRun run;
  run.published.assign(targets.size(), false);
  Temporaries temporaries(targets);
  // No shell: gnuplot itself, the script on its stdin.
  run.status = run_with_input({"gnuplot"}, script, inherit_fd);
  if (run.status != 0) return run;
  for (size_t i = 0; i < targets.size(); ++i) run.published[i] = temporaries.publish(i, targets[i]);
  return run;
}

}  // namespace kvbench
