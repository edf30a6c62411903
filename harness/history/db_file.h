// What a history file must be before SQLite sees it. SQLite opens any path it
// is given: a device (/dev/zero reads forever, /dev/null gets a "-journal"
// beside it), a FIFO (blocks until a writer comes), a directory, a link to any
// of them, an empty file (which it turns into a new database). So every
// command checks the file itself first, the way model/common/input_file.cpp
// does: lstat (a link is refused, not followed), then open with O_NONBLOCK
// and fstat, and only a non-empty regular file that starts as an SQLite
// file in rollback-journal mode, with no journal of an interrupted write
// beside it, reaches SQLite.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

namespace kvbench::history {

// An open history file (read-only descriptor), closed when destroyed.
struct HistoryFile {
  HistoryFile() = default;
  ~HistoryFile();
  HistoryFile(const HistoryFile&) = delete;
  HistoryFile& operator=(const HistoryFile&) = delete;
  int fd = -1;
  int64_t size = 0;
  mode_t mode = 0;  // permission bits
};

// Why the file is opened: to read it (it must exist), or to add to it (a
// missing file is a new history: nullptr).
enum class Purpose { Read, Add };

// Opens and checks `path` as above; InputError "<path>: ..." naming what it
// is instead (one line, nothing created).
std::unique_ptr<HistoryFile> open_history_file(const std::string& path, Purpose purpose);

}  // namespace kvbench::history
