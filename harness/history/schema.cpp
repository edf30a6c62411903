#include "harness/history/schema.h"

#include <array>
#include <map>
#include <optional>
#include <tuple>

#include "harness/history/db_file.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench::history {
namespace {

// Migrations: kMigrations[v] takes a file at version v to version v + 1.
// Each statement runs on its own (sqlite3_prepare compiles one statement).
// Never edit one: a file's schema is checked against what they make.

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

// The run's decoding.protocol: runs of one configuration in the two
// protocols are two series (trend.h); NULL for runs added before version 5.
void to_version_5(const Db& db) { db.exec("ALTER TABLE runs ADD COLUMN protocol TEXT"); }

using Migration = void (*)(const Db&);
constexpr Migration kMigrations[kSchemaVersion] = {to_version_1, to_version_2, to_version_3,
                                                   to_version_4, to_version_5};

void migrate(const Db& db, int from) {
  for (int v = from; v < kSchemaVersion; ++v) {
    kMigrations[v](db);
    // A pragma takes no bound parameter; the number is ours, not input.
    db.exec("PRAGMA user_version = " + std::to_string(v + 1));
  }
}

// One row of sqlite_schema: type and name -> (table, SQL text; NULL for the
// indexes SQLite makes for a primary key).
using ObjectKey = std::pair<std::string, std::string>;
using ObjectDef = std::pair<std::string, std::optional<std::string>>;
using Objects = std::map<ObjectKey, ObjectDef>;

Objects read_objects(const Db& db) {
  Objects out;
  Stmt s(db, "SELECT type, name, tbl_name, sql FROM sqlite_schema", "sqlite_schema");
  while (s.step()) {
    // The schema of a file with at most the history's 5 objects: more is a
    // foreign file, refused below; a bound keeps a huge one from being read.
    if (out.size() > 64) break;
    out[{s.text(0), s.text(1)}] = {s.text(2), s.optional_text(3)};
  }
  return out;
}

// What the migrations make for each version, read back from an in-memory
// database that ran them (so the check can never drift from the code that
// creates the files): the text SQLite stores, ALTER TABLE's edits included.
const Objects& expected_objects(int version) {
  static const std::array<Objects, kSchemaVersion + 1> all = [] {
    std::array<Objects, kSchemaVersion + 1> out;
    Db db(":memory:", Db::Mode::Create, "(kvbench's own schema)");
    out[0] = read_objects(db);
    for (int v = 0; v < kSchemaVersion; ++v) {
      kMigrations[v](db);
      out[v + 1] = read_objects(db);
    }
    return out;
  }();
  return all[static_cast<size_t>(version)];
}

std::string object_name(const ObjectKey& key) {
  return escaped_text(key.first, 64) + " " + escaped_text(key.second, 200);
}

// Refuses a file whose schema is not exactly what `version` created.
void check_objects(const Db& db, int version) {
  const Objects& own = expected_objects(version);
  const Objects seen = read_objects(db);
  const std::string where = escaped_text(db.path(), 512) + ": not a kvbench history: ";
  const std::string which = " (schema version " + std::to_string(version) + ")";
  for (const auto& [key, def] : seen) {
    const auto it = own.find(key);
    if (it == own.end()) throw InputError(where + "it holds " + object_name(key) + which);
    if (it->second != def)
      throw InputError(where + object_name(key) + " is not defined as kvbench defines it" + which);
  }
  for (const auto& [key, def] : own)
    if (!seen.count(key)) throw InputError(where + object_name(key) + " is missing" + which);
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
