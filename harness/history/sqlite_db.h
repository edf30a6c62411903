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
// Concurrent writers: every write runs inside BEGIN IMMEDIATE (the write
// lock is taken up front, so two writers never both read and then both try
// to upgrade, the case where SQLite gives up with SQLITE_BUSY at once), and
// the connection waits up to kBusyTimeoutMs for another writer's lock. The
// rollback journal, not WAL: WAL needs shared memory between the processes,
// which network file systems (a cluster's results folder) do not give.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace kvbench::history {

inline constexpr int kBusyTimeoutMs = 60'000;
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
  enum class Mode { ReadWrite, Create };
  // Opens (Create: creates when missing) `path`; InputError when it cannot
  // be opened. No schema check here (schema.h does it).
  Db(const std::string& path, Mode mode);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }
  // A statement without parameters or rows (BEGIN, COMMIT, DDL).
  void exec(std::string_view sql) const;
  // InputError "<file>: <what>: <sqlite's message>".
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail(const std::string& what, int code) const;

 private:
  std::string path_;
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
