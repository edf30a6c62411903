#include "model/common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "model/common/error.h"
#include "model/common/printable.h"
#include "model/common/temporaries.h"

namespace kvbench {

void refuse_non_regular_target(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // absent: fine (other errors show when creating)
  if (!S_ISREG(st.st_mode))
    throw InputError(path + ": exists and is not a regular file (" +
                     (S_ISLNK(st.st_mode)                          ? "a symbolic link"
                      : S_ISDIR(st.st_mode)                        ? "a directory"
                      : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                      : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                   : "a special file") +
                     "); refusing to replace it");
}

AtomicFile::AtomicFile(std::string path, Sweep sweep)
    : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
  if (path_.find('\0') != std::string::npos)
    throw InputError(escaped_text(path_, 512) + ": a path must not contain a NUL character");
  refuse_non_regular_target(path_);
  if (sweep == Sweep::StaleTemporaries) remove_stale_temporaries(path_);
  // A leftover of an earlier process with this pid (or anything planted
  // there) is removed, never written through.
  ::unlink(tmp_.c_str());
  // Registered before it exists: a signal between the two would otherwise
  // leave the file behind (the handler's unlink of a name not yet created
  // does nothing).
  slot_ = register_temporary(tmp_);
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    forget_temporary(slot_);
    slot_ = -1;
    tmp_.clear();  // not ours: never unlinked
    throw InputError(path_ + ": cannot create (" + std::strerror(err) + ")");
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());  // not committed
  forget_temporary(slot_);
}

void AtomicFile::fail(const char* what, int err) {
  throw InputError(path_ + ": " + what + " (" + std::strerror(err) + ")");
}

void AtomicFile::write(const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd_, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("write failed", errno);
    done += static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("write failed", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("write failed", errno);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("cannot rename into place", errno);
  tmp_.clear();
  forget_temporary(slot_);
  slot_ = -1;
}

void append_to_file(const std::string& path, std::string_view text) {
  refuse_non_regular_target(path);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(path + ": cannot open for appending (" + std::strerror(errno) + ")");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = errno;
      ::close(fd);
      throw InputError(path + ": write failed (" + std::strerror(err) + ")");
    }
    done += static_cast<size_t>(w);
  }
  if (::close(fd) != 0) throw InputError(path + ": write failed (" + std::strerror(errno) + ")");
}

void write_file_atomic(const std::string& path, std::string_view content, Sweep sweep) {
  AtomicFile file(path, sweep);
  file.write(content.data(), content.size());
  file.commit();
}

}  // namespace kvbench
