#include "harness/history/schema.h"

#include <set>

#include "harness/history/db_file.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench::history {
namespace {

// Migrations: kMigrations[v] takes a file at version v to version v + 1.
// Each statement runs on its own (sqlite3_prepare compiles one statement).

void to_version_1(const Db& db) { create_version_1(db); }

void to_version_2(const Db& db) {
  db.exec("ALTER TABLE cells ADD COLUMN spec TEXT");
  db.exec("CREATE INDEX cells_by_group ON cells(configuration, task)");
}

// A run folder of several models is one history run per model, labelled.
void to_version_3(const Db& db) { db.exec("ALTER TABLE runs ADD COLUMN model_label TEXT"); }

// Whether the run's binary was built from a tree with uncommitted changes
// (meta.json git_dirty): 1 or 0; NULL for runs added before version 4.
void to_version_4(const Db& db) { db.exec("ALTER TABLE runs ADD COLUMN git_dirty INTEGER"); }

using Migration = void (*)(const Db&);
constexpr Migration kMigrations[kSchemaVersion] = {to_version_1, to_version_2, to_version_3,
                                                   to_version_4};

void migrate(const Db& db, int from) {
  for (int v = from; v < kSchemaVersion; ++v) {
    kMigrations[v](db);
    // A pragma takes no bound parameter; the number is ours, not input.
    db.exec("PRAGMA user_version = " + std::to_string(v + 1));
  }
}

// The objects a file at `version` may hold besides SQLite's own.
std::set<std::string> own_objects(int version) {
  std::set<std::string> names;
  if (version >= 1) names.insert({"table runs", "table cells"});
  if (version >= 2) names.insert("index cells_by_group");
  return names;
}

// Refuses a file holding anything the history did not create.
void check_objects(const Db& db, int version) {
  const std::set<std::string> own = own_objects(version);
  Stmt s(db, "SELECT type, name FROM sqlite_schema", "sqlite_schema");
  std::set<std::string> seen;
  while (s.step()) {
    const std::string type = s.text(0), name = s.text(1);
    // SQLite's own objects (primary-key indexes, ANALYZE's statistics); no
    // one else may create a name starting with "sqlite_".
    if (name.rfind("sqlite_", 0) == 0) continue;
    const std::string object = type + " " + name;
    if (!own.count(object))
      throw InputError(escaped_text(db.path(), 512) + ": not a kvbench history: it holds " +
                       escaped_text(object, 200) + " (schema version " + std::to_string(version) +
                       ")");
    seen.insert(object);
  }
  for (const std::string& object : own)
    if (!seen.count(object))
      throw InputError(escaped_text(db.path(), 512) + ": not a kvbench history: " + object +
                       " is missing (schema version " + std::to_string(version) + ")");
}

}  // namespace

int schema_version(const Db& db) {
  Stmt s(db, "PRAGMA user_version", "user_version");
  if (!s.step()) db.fail("user_version");
  return static_cast<int>(s.integer(0));
}

void create_version_1(const Db& db) {
  db.exec(
      "CREATE TABLE runs("
      " run_id TEXT PRIMARY KEY NOT NULL,"  // sha256 of the run's identity (add.h)
      " experiment TEXT NOT NULL,"
      " git_commit TEXT NOT NULL,"
      " commit_time INTEGER,"  // the commit's date, unix seconds (git); NULL when unknown
      " started_utc TEXT NOT NULL,"
      " model_sha256 TEXT NOT NULL,"
      " config_hash TEXT NOT NULL,"
      " machine TEXT NOT NULL,"
      " folder TEXT NOT NULL,"  // where it was added from (informative)
      " added_utc TEXT NOT NULL)");
  db.exec(
      "CREATE TABLE cells("
      " run_id TEXT NOT NULL REFERENCES runs(run_id),"
      " cell_id TEXT NOT NULL,"
      " configuration TEXT NOT NULL,"
      " task TEXT NOT NULL,"
      " instance TEXT NOT NULL,"
      " score REAL NOT NULL,"
      " PRIMARY KEY(run_id, cell_id))");
  db.exec("PRAGMA user_version = 1");
}

int check_schema(const Db& db) {
  // Reading the version is the first read of the file: a file that is not
  // SQLite fails here ("file is not a database").
  const int version = schema_version(db);
  if (version < 0 || version > kSchemaVersion)
    throw InputError(escaped_text(db.path(), 512) + ": schema version " + std::to_string(version) +
                     " is not one this kvbench knows (0 to " + std::to_string(kSchemaVersion) +
                     "): written by a newer kvbench, or not a kvbench history");
  Transaction read(db, Transaction::Kind::Read);
  check_objects(db, version);
  read.commit();
  return version;
}

int check_and_migrate(const Db& db) {
  const int version = check_schema(db);
  if (version == kSchemaVersion) return version;
  Transaction write(db, Transaction::Kind::Write);
  migrate(db, version);
  check_objects(db, kSchemaVersion);
  write.commit();
  return version;
}

std::unique_ptr<Db> open_history_read(const std::string& path) {
  open_history_file(path, Purpose::Read);  // checked, then closed: SQLite opens it by name
  auto db = std::make_unique<Db>(path, Db::Mode::ReadOnly);
  check_schema(*db);
  return db;
}

}  // namespace kvbench::history
