// Whole-file writes that readers never see half done: the content goes to a
// temporary file in the same directory, is flushed to disk, then renamed
// over the target (rename is atomic on POSIX file systems). The one
// mechanism for every file kvbench writes (run folders, snapshots, models,
// datasets).
#pragma once

#include <string>
#include <string_view>

namespace kvbench {

// A file written in pieces and published at once: the constructor refuses a
// target that exists and is not a regular file (a device node, a FIFO, a
// directory, a symbolic link: replacing them is never what was meant), and
// creates "<path>.tmp.<pid>" exclusively without following links
// (O_EXCL | O_NOFOLLOW), registered so that SIGINT/SIGTERM remove it
// (model/common/temporaries.h); commit() syncs, closes and renames it over
// `path`. A path holding a NUL is refused (the system would cut it there).
// Destroyed without commit() (an exception on the way), the temporary file
// is removed and `path` is untouched. Errors are InputErrors naming `path`.
// Whether a writer first removes "<path>.tmp.<pid>" files of processes that
// are gone (what a kill -9 left: remove_stale_temporaries). On by default;
// off for files in folders of thousands (a run folder's cells/, whose
// temporaries the run folder's lock sweeps), where listing the folder at
// every write would cost more than the write.
enum class Sweep { StaleTemporaries, None };

class AtomicFile {
 public:
  explicit AtomicFile(std::string path, Sweep sweep = Sweep::StaleTemporaries);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_; }  // for streaming writers
  // "<path>.tmp.<pid>", for a writer that reopens the file by name (an
  // SQLite copy); valid until commit() or destruction.
  const std::string& temp_path() const { return tmp_; }
  void write(const void* data, size_t n);
  void commit();

 private:
  [[noreturn]] void fail(const char* what, int err);
  std::string path_, tmp_;
  int fd_ = -1;
  int slot_ = -1;  // the temporary's registration (removed on SIGINT/SIGTERM)
};

// Throws InputError naming the path when the directory is not writable or
// the disk is full; the temporary file is removed on failure.
void write_file_atomic(const std::string& path, std::string_view content,
                       Sweep sweep = Sweep::StaleTemporaries);

// Appends `text` (whole records, newline included) to the file at `path`,
// created if absent, opened for this one call (O_APPEND, a link not
// followed): a file replaced meanwhile (an editor's save, a git checkout or
// stash of it) receives the records, where a descriptor kept open would go
// on writing into the unlinked old file and lose them.
void append_to_file(const std::string& path, std::string_view text);

// InputError "<path>: exists and is not a regular file ..." when `path`
// exists as anything but a regular file (checked without following a link).
void refuse_non_regular_target(const std::string& path);

}  // namespace kvbench
