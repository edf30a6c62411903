#include "model/common/temporaries.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>

namespace kvbench {
namespace {

// The registries are fixed arrays the signal handler can walk without
// locks or allocation: a slot is claimed (kWriting) by compare-and-swap,
// filled, then published (kReady); the handler acts on kReady slots only.
enum SlotState : int { kFree = 0, kWriting = 1, kReady = 2 };

struct PathSlot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
struct PidSlot {
  std::atomic<int> state{kFree};
  pid_t pid = 0;
};

// More than any command has at once (a report: its plots, two files each,
// and one AtomicFile at a time; a run: a cell and a kept prefill per thread).
std::array<PathSlot, 128> g_temporaries;
std::array<PidSlot, 8> g_children;
char g_message[4096];
std::atomic<bool> g_installed{false};

template <typename Slots>
int claim(Slots& slots) {
  for (size_t i = 0; i < slots.size(); ++i) {
    int expected = kFree;
    if (slots[i].state.compare_exchange_strong(expected, kWriting)) return static_cast<int>(i);
  }
  return -1;
}

void on_exit_signal(int sig) {
  // Only async-signal-safe calls: kill, unlink, write, _exit.
  for (auto& c : g_children)
    if (c.state.load() == kReady) ::kill(c.pid, SIGKILL);
  for (auto& t : g_temporaries)
    if (t.state.load() == kReady) ::unlink(t.path);
  const size_t n = ::strnlen(g_message, sizeof g_message);
  if (n) {
    const ssize_t ignored = ::write(STDERR_FILENO, g_message, n);
    (void)ignored;
  }
  _exit(128 + sig);
}

}  // namespace

void install_exit_cleanup() {
  if (g_installed.exchange(true)) return;
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    // A signal the parent made us ignore (nohup, a background job) stays ignored.
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_handler = on_exit_signal;
    sigemptyset(&action.sa_mask);
    // Block the others while one runs: one cleanup, one exit code.
    for (const int other : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&action.sa_mask, other);
    ::sigaction(sig, &action, nullptr);
  }
}

void set_interrupt_message(const std::string& message) {
  const size_t n = std::min(message.size(), sizeof g_message - 1);
  std::memcpy(g_message, message.data(), n);
  g_message[n] = '\0';
}

int register_temporary(const std::string& path) {
  if (path.empty() || path.size() >= PATH_MAX) return -1;
  const int slot = claim(g_temporaries);
  if (slot < 0) return -1;
  std::memcpy(g_temporaries[slot].path, path.c_str(), path.size() + 1);
  g_temporaries[slot].state.store(kReady);
  return slot;
}

void forget_temporary(int slot) {
  if (slot >= 0) g_temporaries[slot].state.store(kFree);
}

int register_child(pid_t pid) {
  const int slot = claim(g_children);
  if (slot < 0) return -1;
  g_children[slot].pid = pid;
  g_children[slot].state.store(kReady);
  return slot;
}

void forget_child(int slot) {
  if (slot >= 0) g_children[slot].state.store(kFree);
}

bool is_temporary_name(const std::string& name, long* pid) {
  const auto at = name.rfind(".tmp.");
  if (at == std::string::npos || at + 5 >= name.size() || name.size() - (at + 5) > 10) return false;
  if (name.find_first_not_of("0123456789", at + 5) != std::string::npos) return false;
  if (pid) *pid = std::stol(name.substr(at + 5));
  return true;
}

void remove_stale_temporaries(const std::string& target) {
  const auto slash = target.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : target.substr(0, slash + 1);
  const std::string prefix =
      (slash == std::string::npos ? target : target.substr(slash + 1)) + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    long pid = 0;
    // Exactly prefix + digits (is_temporary_name reads the last ".tmp.").
    if (name.compare(0, prefix.size(), prefix) != 0 || !is_temporary_name(name, &pid) ||
        name.rfind(".tmp.") != prefix.size() - 5)
      continue;
    if (pid <= 0 || pid > INT_MAX || pid == ::getpid()) continue;
    // Alive (or not ours to signal, EPERM: alive too): its temporary stays.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const std::string path = (slash == std::string::npos ? "" : dir) + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(path.c_str());
  }
  ::closedir(d);
}

}  // namespace kvbench
