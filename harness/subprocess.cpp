#include "harness/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "model/common/temporaries.h"

extern char** environ;

namespace kvbench {

namespace {

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 127;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 127;
}

}  // namespace

// argv0 as execve needs it: a path with a '/' as it is, else the first
// executable file of that name on PATH ("" when there is none).
std::string resolve_on_path(const std::string& argv0) {
  if (argv0.find('/') != std::string::npos) return argv0;
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + argv0;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

int run_with_input(const std::vector<std::string>& argv, std::string_view input, int inherit_fd) {
  const std::string program = resolve_on_path(argv.at(0));
  if (program.empty()) return 127;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return 127;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  // fork + execve rather than posix_spawn: the child must ask for a signal
  // on its parent's death (prctl) and keep `inherit_fd`, between the two.
  // Only async-signal-safe calls in the child (the parent has threads).
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) _exit(127);
    if (::dup2(pipe_fds[0], STDIN_FILENO) < 0) _exit(127);
    const int null_fd = ::open("/dev/null", O_WRONLY);
    if (null_fd < 0 || ::dup2(null_fd, STDOUT_FILENO) < 0 || ::dup2(null_fd, STDERR_FILENO) < 0)
      _exit(127);
    if (inherit_fd >= 0 && ::fcntl(inherit_fd, F_SETFD, 0) != 0) _exit(127);
    ::execve(program.c_str(), args.data(), environ);
    _exit(127);
  }
  ::close(pipe_fds[0]);
  if (pid < 0) {
    ::close(pipe_fds[1]);
    return 127;
  }
  const int child_slot = register_child(pid);
  // A child that exits early must not kill us with SIGPIPE.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  size_t done = 0;
  while (done < input.size()) {
    const ssize_t w = ::write(pipe_fds[1], input.data() + done, input.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  ::close(pipe_fds[1]);
  sigaction(SIGPIPE, &old, nullptr);
  const int code = wait_for(pid);
  forget_child(child_slot);
  return code;
}

Captured run_capture(const std::vector<std::string>& argv, const std::string& dir,
                     size_t max_bytes) {
  Captured result;
  int out_fds[2], err_fds[2];
  if (::pipe2(out_fds, O_CLOEXEC) != 0) return result;
  if (::pipe2(err_fds, O_CLOEXEC) != 0) {
    ::close(out_fds[0]);
    ::close(out_fds[1]);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_fds[1], STDERR_FILENO);
  if (!dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_fds[1]);
  ::close(err_fds[1]);
  if (spawned != 0) {
    ::close(out_fds[0]);
    ::close(err_fds[0]);
    result.spawn_error = spawned;
    return result;
  }
  // Both streams are drained together, so a child filling one pipe while
  // we wait on the other can never deadlock.
  pollfd fds[2] = {{out_fds[0], POLLIN, 0}, {err_fds[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_streams = 2;
  char buf[4096];
  while (open_streams > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_streams;
        continue;
      }
      std::string& sink = *sinks[i];
      sink.append(buf, std::min(static_cast<size_t>(n), max_bytes - sink.size()));
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  result.code = wait_for(pid);
  return result;
}

}  // namespace kvbench
