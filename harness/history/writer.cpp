#include "harness/history/writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "harness/history/db_file.h"
#include "harness/history/schema.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench::history {

namespace fs = std::filesystem;

namespace {

std::string named(const std::string& path) { return escaped_text(path, 512); }

// The directory holding `path` ("." for a bare file name).
std::string directory_of(const std::string& path) {
  const std::string dir = fs::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// Whether "<base>.tmp.<digits>" names a temporary of a writer that is gone.
// A number that cannot be a process id (0 would signal our own process
// group) belongs to no one.
bool dead_writers_temporary(const std::string& name, const std::string& base) {
  const std::string prefix = base + ".tmp.";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  const std::string digits = name.substr(prefix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos) return false;
  if (digits.size() > 10) return true;
  const long long pid = std::stoll(digits);
  if (pid <= 0 || pid > INT_MAX) return true;
  // EPERM: a live process of another user; any answer but ESRCH keeps it.
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

void remove_dead_writers_temporaries(const std::string& path) {
  const std::string dir = directory_of(path), base = fs::path(path).filename().string();
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;  // the copy's creation reports what is wrong with the directory
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d))
    if (dead_writers_temporary(e->d_name, base)) stale.push_back(e->d_name);
  ::closedir(d);
  for (const std::string& name : stale) {
    const std::string file = dir + "/" + name;
    struct stat st {};
    // unlink removes a link itself, never its target; a directory stays.
    if (::lstat(file.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) ::unlink(file.c_str());
  }
}

}  // namespace

// An advisory flock on a directory, held until destroyed.
class DirectoryLock {
 public:
  DirectoryLock(const std::string& dir, const std::string& db_path) {
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0)
      throw InputError(named(db_path) + ": cannot open its directory (" + std::strerror(errno) +
                       ")");
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitForWriterMs);
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EINTR) continue;
      if (err != EWOULDBLOCK || std::chrono::steady_clock::now() > give_up) {
        ::close(fd_);
        throw InputError(
            named(db_path) + ": " +
            (err == EWOULDBLOCK
                 ? "another kvbench process held its directory for " +
                       std::to_string(kWaitForWriterMs / 1000) +
                       " s (adding to this history, or writing a run folder there)"
                 : "cannot lock its directory (" + std::string(std::strerror(err)) + ")"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~DirectoryLock() { ::close(fd_); }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

HistoryWriter::HistoryWriter(const std::string& path) : path_(path) {
  // A device or a FIFO is refused before anything else happens beside it.
  refuse_non_regular_target(path);
  // The file is opened and copied only with the lock held: a copy read
  // before another writer's rename would lose that writer's rows.
  lock_ = std::make_unique<DirectoryLock>(directory_of(path), path);
  remove_dead_writers_temporaries(path);
  const std::unique_ptr<HistoryFile> source = open_history_file(path, Purpose::Add);
  file_ = std::make_unique<AtomicFile>(path);
  if (source) {
    mode_ = static_cast<int>(source->mode);
    // The copy: read through the descriptor that was checked (a regular file).
    std::vector<char> buf(1 << 20);
    for (;;) {
      const ssize_t n = ::read(source->fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw InputError(named(path) + ": read error (" + std::strerror(errno) + ")");
      if (n == 0) break;
      file_->write(buf.data(), static_cast<size_t>(n));
    }
  }
  // A new history starts as an empty copy: SQLite reads it as version 0.
  db_ = std::make_unique<Db>(file_->temp_path(), Db::Mode::Copy, path);
  const int version = check_and_migrate(*db_);
  migrated_ = !source || version != kSchemaVersion;
}

HistoryWriter::~HistoryWriter() = default;

void HistoryWriter::commit() {
  const bool changed = migrated_ || db_->total_changes() > 0;
  db_.reset();  // closed: every page is in the file
  if (!changed) {
    file_.reset();  // the temporary removed, the database untouched
    return;
  }
  if (mode_ >= 0 && ::fchmod(file_->fd(), static_cast<mode_t>(mode_)) != 0)
    throw InputError(named(path_) + ": cannot set the copy's permissions (" + std::strerror(errno) +
                     ")");
  file_->commit();
  file_.reset();
}

void check_history_writable(const std::string& path) {
  if (open_history_file(path, Purpose::Add)) open_history_read(path);
  // The copy and the rename need the directory.
  if (::access(directory_of(path).c_str(), W_OK | X_OK) != 0)
    throw InputError(named(path) + ": cannot write in its directory (" + std::strerror(errno) +
                     ")");
}

}  // namespace kvbench::history
