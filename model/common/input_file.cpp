#include "model/common/input_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench {

int open_regular_file(const std::string& path, struct stat* st_out) {
  // The system would read the path only up to a NUL: another file.
  if (path.find('\0') != std::string::npos)
    throw InputError(escaped_text(path, 512) + ": a path must not contain a NUL character");
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw InputError(path + ": cannot stat (" + std::strerror(err) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path + ": not a regular file");
  }
  if (st_out) *st_out = st;
  return fd;
}

std::string read_regular_file(const std::string& path, size_t max_bytes, const std::string& what) {
  struct stat st {};
  const int fd = open_regular_file(path, &st);
  const auto too_large = [&] {
    ::close(fd);
    throw InputError(path + ": larger than " + std::to_string(max_bytes) +
                     " bytes (the limit for " + what + ")");
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes) too_large();
  std::string out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  for (;;) {
    if (done == out.size()) {
      // The file may have grown since fstat: read on, within the limit.
      if (out.size() >= max_bytes + 1) too_large();
      out.resize(std::min(max_bytes + 1, out.size() + 65536));
    }
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw InputError(path + ": read error (" + std::strerror(err) + ")");
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (done > max_bytes)
    throw InputError(path + ": larger than " + std::to_string(max_bytes) +
                     " bytes (the limit for " + what + ")");
  out.resize(done);
  return out;
}

}  // namespace kvbench
