// A run folder, results/<experiment>-<timestamp>/:
//   config.json      the resolved experiment config (defaults filled)
//   meta.json        git commit, model sha256 (several models: "models", each
//                    with its sha256), CPU, threads, library versions, start time
//   cells/<id>.json  one file per completed cell (naming its model), written atomically: a run
//                    interrupted at any point (Ctrl-C, kill -9) resumes by
//                    running exactly the cells without a file
//   cells.jsonl.zst  instead of cells/, in a finished run packed by `kvbench pack`
// A process that writes a folder (run, --resume, report, merge) holds an
// advisory flock on it (the kernel releases it when the process dies), so a
// second writer is refused; taking the lock removes the temporaries
// (*.tmp.<pid>) an interrupted writer left behind. Folders may come from
// others: every file is read bounded (model/common/input_file.h) and checked field
// by field before use, so a damaged one is an error naming it.
//   metrics.json, predictions.jsonl, table.md, table.csv, cells.csv, cells.jsonl,
//   plots/, report.md, report.html
//                    derived from the cells by `kvbench report` (re-creatable)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/common/input_file.h"

namespace kvbench {

// The current UTC time as run folders are named: 20261121-063533.
std::string utc_stamp();

// InputError naming `path` when it holds a NUL, a control character or
// invalid UTF-8: no run folder is made or written there.
void check_run_folder_path(const std::string& path);

// Creates <output>/<name>-<UTC timestamp>/ (and <output>), with a numeric
// suffix when that exists: never an existing folder. Returns its path;
// InputError when not writable.
std::string create_stamped_folder(const std::string& output, const std::string& name);

class RunFolder {
 public:
  // Creates <output>/<name>-<UTC timestamp>/ (a numeric suffix when it
  // exists) with config.json and meta.json. InputError when not writable.
  // The folder is locked for writing.
  static RunFolder create(const std::string& output, const std::string& name,
                          const nlohmann::json& config, const nlohmann::json& meta);
  enum class Access { Read, Write };
  // An existing folder (for --resume, report, merge, compare); InputError
  // when it has no valid config.json, or (Write) when another process holds
  // its lock.
  static RunFolder open(const std::string& dir, Access access = Access::Read);

  const std::string& dir() const { return dir_; }
  const nlohmann::json& config() const { return config_; }
  // The descriptor that holds the folder's lock (-1 when opened to read):
  // a child that writes into the folder (gnuplot) inherits it, so the lock
  // lasts as long as the child writes.
  int lock_fd() const { return lock_fd_ ? *lock_fd_ : -1; }
  nlohmann::json meta() const;

  bool has_cell(const std::string& id) const;
  void write_cell(const std::string& id, const nlohmann::json& cell) const;
  // Every completed cell, sorted by id (deterministic order); each checked
  // (check_cell) — a damaged one is an InputError naming its file.
  std::vector<nlohmann::json> cells() const;
  // Whether its cells are packed in cells.jsonl.zst (harness/run/packed_cells.h):
  // read as cells/ is; a run cannot add to them.
  bool packed() const;
  std::string path(const std::string& relative) const { return dir_ + "/" + relative; }
  // Removes the folder and everything in it (a run that failed before any cell).
  void remove() const;

 private:
  void lock();
  std::string dir_;
  nlohmann::json config_;
  std::shared_ptr<const int> lock_fd_;  // shared by copies; closed (unlocked) with the last
};

// The fields of a cell that report, compare, merge, the table and the plots
// read, checked for presence and type; `id` must equal the file's stem
// `expected_id` and be a safe file name. InputError "<path>: <field>: ..."
void check_cell(const nlohmann::json& cell, const std::string& path,
                const std::string& expected_id);

// meta.json's "speed_withheld" (harness/report/speed_withheld.h): at most this many bytes.
inline constexpr size_t kMaxSpeedWithheldBytes = 1000;

// Reads a JSON file (a regular file of at most max_bytes, nested at most
// kMaxJsonDepth deep); InputError with the path (and parse position) on failure.
nlohmann::json read_json_file(const std::string& path, size_t max_bytes = kMaxConfigBytes);
// JSON text with invalid UTF-8 (model output can hold partial characters)
// replaced by U+FFFD instead of throwing.
std::string dump_json(const nlohmann::json& value, int indent = 2);
// The text write_json_atomic writes for `value` (pretty JSON and a newline).
std::string json_file_text(const nlohmann::json& value);
// Writes pretty JSON atomically.
void write_json_atomic(const std::string& path, const nlohmann::json& value);

}  // namespace kvbench
