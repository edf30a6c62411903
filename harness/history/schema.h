// The history database's layout and its versions. PRAGMA user_version holds
// the version; a writer brings an older file up to kSchemaVersion on its copy
// (writer.h), one migration per step, and a reader reads any known version as
// it is (never migrating: it writes nothing).
//
//   version 0  no tables yet (a new history, before the first migration)
//   version 1  runs (one row per run folder: commit, commit time, start time,
//              model sha256, config hash, machine) and cells (per cell:
//              configuration label, task, instance id, score), keyed by
//              (run_id, cell_id)
//   version 2  cells.spec, the configuration's canonical policy spec (NULL
//              for cells added by version 1, which did not keep it), and an
//              index on (configuration, task) for show and plot
//   version 3  runs.model_label: the model's label when the run folder ran
//              several models (one history run per model); NULL otherwise
//   version 4  runs.git_dirty: 1 when the run's binary was built with
//              uncommitted changes, 0 when not, NULL for runs added before
//   version 5  runs.protocol: the run's decoding.protocol ("query_aware" or
//              "query_agnostic"), which series are keyed by; NULL for runs
//              added before, read as query_aware (the only protocol before
//              kvbench 95c96c5) until their folder is added again
//
// A file is refused with "<file>: ..." when it is newer than this kvbench,
// when it is not an SQLite file or is damaged, and when its schema is not
// exactly what this kvbench creates for its version: every object in
// sqlite_schema (type, name, table and full SQL text) is compared with the
// objects the migrations up to that version make, so an extra index, a
// trigger, a view, a CHECK constraint or a changed column type names the
// object and nothing is read or written.
#pragma once

#include <memory>
#include <string>

#include "harness/history/sqlite_db.h"

namespace kvbench::history {

inline constexpr int kSchemaVersion = 5;

// Where the CLI keeps the history unless told (--db): under results/, which
// git ignores, like run folders.
inline constexpr const char* kDefaultHistoryDb = "results/history.sqlite";

// Opens the history at `path` for reading: the file checked (db_file.h), then
// opened read-only and immutable, its version and schema checked. Nothing
// is created or written, a missing file included (an InputError).
std::unique_ptr<Db> open_history_read(const std::string& path);

// The file's version after checking it is one this kvbench knows and that
// its schema is exactly that version's; InputError naming the file and the
// first object that differs.
int check_schema(const Db& db);

// check_schema, then the migrations from the file's version to
// kSchemaVersion in one transaction (on a writer's copy), checked again.
// Returns the version the file had.
int check_and_migrate(const Db& db);

// The file's PRAGMA user_version.
int schema_version(const Db& db);

// Version 1's layout exactly as version 1 created it, for tests that build an
// old file and migrate it.
void create_version_1(const Db& db);

}  // namespace kvbench::history
