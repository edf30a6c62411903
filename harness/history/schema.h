// The history database's layout and its versions. PRAGMA user_version holds
// the version; open_history() brings an older file up to kSchemaVersion, one
// migration per step, inside one write transaction (so two processes opening
// a new file at once migrate it once), and refuses anything else.
//
//   version 0  an empty file (what sqlite3_open creates)
//   version 1  runs (one row per run folder: commit, commit time, start time,
//              model sha256, config hash, machine) and cells (per cell:
//              configuration label, task, instance id, score), keyed by
//              (run_id, cell_id)
//   version 2  cells.spec, the configuration's canonical policy spec (NULL
//              for cells added by version 1, which did not keep it), and an
//              index on (configuration, task) for show and plot
//   version 3  runs.model_label: the model's label when the run folder ran
//              several models (one history run per model); NULL otherwise
//
// A file is refused with "<file>: ..." when it is newer than this kvbench,
// when it is not an SQLite file or is damaged, and when it holds tables,
// views, triggers or indexes that are not the history's own (a foreign
// database: nothing is written to it).
#pragma once

#include <memory>
#include <string>

#include "harness/history/sqlite_db.h"

namespace kvbench::history {

inline constexpr int kSchemaVersion = 4;

// Where the CLI keeps the history unless told (--db): under results/, which
// git ignores, like run folders.
inline constexpr const char* kDefaultHistoryDb = "results/history.sqlite";

// Opens the history at `path` and migrates it to kSchemaVersion. create:
// make the file when it is missing (history add); otherwise a missing file
// is an InputError.
std::unique_ptr<Db> open_history(const std::string& path, bool create);

// The file's PRAGMA user_version.
int schema_version(const Db& db);

// Version 1's layout exactly as version 1 created it, for tests that build an
// old file and migrate it.
void create_version_1(const Db& db);

}  // namespace kvbench::history
