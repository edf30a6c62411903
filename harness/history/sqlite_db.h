// A thin RAII layer over the SQLite C API (Debian's libsqlite3) for the
// history database: one connection, prepared statements with bound
// parameters only (no SQL is ever built from data), and every failure an
// InputError "<file>: <what>" so the CLI prints one line and exits 2.
//
// The file may come from someone else, so a connection is opened hardened:
// SQLITE_DBCONFIG_DEFENSIVE (no writes to the schema table, no corrupting
// pragmas), trusted_schema off, triggers and views disabled (a foreign file
// cannot run code of its own when we read or write a table), and a 1 MiB
// cap on any string or blob SQLite hands back (SQLITE_LIMIT_LENGTH).
//
// Never in place: readers open a file read-only and immutable (nothing is
// locked, journalled or created beside it), and writers change a private
// copy that replaces the file once complete (writer.h). So no connection ever
// keeps a rollback journal or WAL beside the history.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace kvbench::history {

inline constexpr int kMaxValueBytes = 1 << 20;

class Db;

// One prepared statement. bind_* take 1-based parameter indexes; step()
// returns true while there is a row. Column readers check the stored type
// (SQLite columns are not typed: a foreign file may hold text where a number
// belongs) and throw InputError naming the file, table and column.
class Stmt {
 public:
  Stmt(const Db& db, std::string_view sql, std::string what);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int index, std::string_view text);
  Stmt& bind(int index, int64_t value);
  Stmt& bind(int index, double value);
  Stmt& bind_null(int index);
  bool step();
  void reset();

  bool is_null(int column) const;
  std::string text(int column) const;
  int64_t integer(int column) const;
  double real(int column) const;  // REAL or INTEGER
  std::optional<int64_t> optional_integer(int column) const;
  std::optional<std::string> optional_text(int column) const;

 private:
  [[noreturn]] void bad_column(int column, const char* expected) const;
  const Db& db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string what_;  // the table (or query) it reads, for messages
};

class Db {
 public:
  enum class Mode {
    // SQLite's "file:...?mode=ro&immutable=1": no lock, no journal, no file
    // created, nothing written. Right for a history because kvbench never
    // changes a history file in place (writer.h replaces it by rename): the
    // file a reader opened stays as it was while it reads.
    ReadOnly,
    // A private copy being written (writer.h): read-write, the rollback
    // journal in memory (the copy is discarded on any failure, so nothing on
    // disk needs one), no fsync of its own (the writer syncs the copy once).
    Copy,
    // Read-write, created when missing, SQLite's default journal: only for
    // tests that build fixture files and for in-memory databases.
    Create,
  };
  // Opens `file`; InputError naming `name` (default: the file) when it
  // cannot be opened. No schema check here (schema.h does it).
  Db(const std::string& file, Mode mode, std::string name = "");
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // The file as messages name it (a copy is named by the file it replaces).
  const std::string& path() const { return name_; }
  sqlite3* handle() const { return db_; }
  // Rows inserted, updated or deleted since the connection was opened.
  int64_t total_changes() const;
  // A statement without parameters or rows (BEGIN, COMMIT, DDL).
  void exec(std::string_view sql) const;
  // InputError "<file>: <what>: <sqlite's message>".
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail(const std::string& what, int code) const;

 private:
  std::string name_;
  sqlite3* db_ = nullptr;
};

// BEGIN IMMEDIATE (or DEFERRED for reads) ... COMMIT; rolled back when
// destroyed without commit() (an exception on the way).
class Transaction {
 public:
  enum class Kind { Read, Write };
  Transaction(const Db& db, Kind kind);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  const Db& db_;
  bool open_ = true;
};

}  // namespace kvbench::history
