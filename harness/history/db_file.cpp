#include "harness/history/db_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "model/common/atomic_file.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench::history {
namespace {

std::string named(const std::string& path) { return escaped_text(path, 512); }

const char* kind(mode_t mode) {
  return S_ISLNK(mode)                    ? "a symbolic link"
         : S_ISDIR(mode)                  ? "a directory"
         : S_ISFIFO(mode)                 ? "a FIFO"
         : S_ISCHR(mode) || S_ISBLK(mode) ? "a device"
         : S_ISSOCK(mode)                 ? "a socket"
                                          : "a special file";
}

// Reads exactly n bytes at offset 0 (n is at most the file's size).
bool read_head(int fd, unsigned char* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, out + done, n - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

// A rollback journal beside the file: an in-place write of an older kvbench
// (or of the sqlite3 shell) was interrupted. SQLite would roll it back on
// the next read-write open; an immutable reader and a copy ignore it and
// would see the half-written pages, so the file is refused until it is
// rolled back. An empty journal is no hot journal.
void refuse_hot_journal(const std::string& path) {
  const std::string journal = path + "-journal";
  struct stat st {};
  if (::lstat(journal.c_str(), &st) != 0) return;
  if (S_ISREG(st.st_mode) && st.st_size == 0) return;
  throw InputError(named(path) + ": " + named(journal) +
                   " beside it holds an interrupted write (an older kvbench or another "
                   "program wrote it in place): open the database once with sqlite3 to roll it "
                   "back, then retry");
}

}  // namespace

HistoryFile::~HistoryFile() {
  if (fd >= 0) ::close(fd);
}

std::unique_ptr<HistoryFile> open_history_file(const std::string& path, Purpose purpose) {
  // A writer's own check (the one AtomicFile makes again): what it would
  // replace must be a regular file.
  if (purpose == Purpose::Add) refuse_non_regular_target(path);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT && purpose == Purpose::Add) return nullptr;  // a new history
    throw InputError(
        named(path) + ": cannot open (" + std::strerror(err) + ")" +
        (err == ENOENT ? ": no history there yet? kvbench history add creates it" : ""));
  }
  if (!S_ISREG(st.st_mode))
    throw InputError(named(path) + ": not a history database: " + kind(st.st_mode) +
                     ", not a regular file");
  auto file = std::make_unique<HistoryFile>();
  // O_NONBLOCK: were it swapped for a FIFO since the lstat, the open returns
  // at once and fstat refuses it.
  file->fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (file->fd < 0) throw InputError(named(path) + ": cannot open (" + std::strerror(errno) + ")");
  if (::fstat(file->fd, &st) != 0)
    throw InputError(named(path) + ": cannot stat (" + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode))
    throw InputError(named(path) + ": not a history database: " + kind(st.st_mode) +
                     ", not a regular file");
  file->size = static_cast<int64_t>(st.st_size);
  file->mode = st.st_mode & 0777;
  if (file->size == 0)
    throw InputError(
        named(path) + ": not a history database (empty file)" +
        (purpose == Purpose::Add ? ": remove it, or name a new file, to start a new history" : ""));
  // SQLite's header: the magic string, and bytes 18 and 19 (the read and
  // write versions) 1 for a rollback journal; 2 is WAL mode, whose "-wal"
  // file holds rows the main file does not (and a reader or a copy would
  // not see). kvbench never sets WAL.
  unsigned char head[100];
  if (file->size < 100 || !read_head(file->fd, head, sizeof head) ||
      std::memcmp(head, "SQLite format 3", 16) != 0)
    throw InputError(named(path) + ": not a history database (not an SQLite file)");
  if (head[18] != 1 || head[19] != 1)
    throw InputError(named(path) + ": not a history database: " +
                     (head[18] == 2 || head[19] == 2
                          ? "in SQLite's WAL mode, which kvbench never sets"
                          : "an SQLite file format this kvbench does not read"));
  refuse_hot_journal(path);
  return file;
}

}  // namespace kvbench::history
