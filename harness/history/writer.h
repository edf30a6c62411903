// Writing the history the way kvbench writes every file (AtomicFile): never
// in place. A writer copies the database to "<db>.tmp.<pid>" beside it,
// checks and migrates the copy, adds to it, and renames it over the
// database once complete and synced. So a reader (Db::Mode::ReadOnly) never
// sees a half-written file, a kill -9 leaves the old database as it was and
// only a temporary, a failed add (a row that cannot be stored, a damaged run
// folder) writes nothing, and no journal ever appears beside the database.
//
// Writers take turns: each holds an advisory flock on the database's
// directory from before it copies until after it renames (a database that
// does not exist yet has no file to lock, and a lock on the file itself
// would be lost when the file is replaced), waiting up to kWaitForWriterMs
// for another. The kernel releases it when a writer dies, so a kill -9
// never leaves a stale lock. With it held, temporaries "<db>.tmp.<digits>"
// whose process is gone (kill(pid, 0) fails with ESRCH) are removed: what a
// killed writer left.
#pragma once

#include <memory>
#include <string>

#include "harness/history/sqlite_db.h"
#include "model/common/atomic_file.h"

namespace kvbench::history {

inline constexpr int kWaitForWriterMs = 60'000;

class DirectoryLock;

class HistoryWriter {
 public:
  // Locks, removes dead writers' temporaries, copies `path` (when it
  // exists; it is checked first, db_file.h) and opens, checks and migrates
  // the copy (schema.h). InputError naming `path`.
  explicit HistoryWriter(const std::string& path);
  // Without commit(): the copy is discarded, the database untouched.
  ~HistoryWriter();
  HistoryWriter(const HistoryWriter&) = delete;
  HistoryWriter& operator=(const HistoryWriter&) = delete;

  const Db& db() const { return *db_; }
  // Closes the copy, gives it the database's permission bits (a new
  // history keeps AtomicFile's), syncs it and renames it over the database.
  // A copy that holds nothing new (every cell already there, no migration)
  // is discarded instead: re-adding leaves the file as it was, to the byte.
  void commit();

 private:
  std::string path_;
  std::unique_ptr<DirectoryLock> lock_;  // released last
  std::unique_ptr<AtomicFile> file_;
  int mode_ = -1;          // the database's permission bits, kept by the copy (-1: a new one)
  bool migrated_ = false;  // the copy's layout differs from the database's (or is new)
  std::unique_ptr<Db> db_;
};

// What a HistoryWriter for `path` would refuse, checked now and writing
// nothing: a special file, an empty file, a file that is not a history of a
// version this kvbench knows, a directory that does not exist or cannot be
// written. `run --history` calls it before the run (a bad file fails before
// hours of work) and writes only at the end.
void check_history_writable(const std::string& path);

}  // namespace kvbench::history
