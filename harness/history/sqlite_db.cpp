#include "harness/history/sqlite_db.h"

#include <sqlite3.h>

#include <cctype>
#include <filesystem>

#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench::history {

namespace {

// "file:///abs/path?mode=ro&immutable=1" with every byte of the absolute path
// but [A-Za-z0-9/._~-] percent-encoded: a '?', '#' or '%' in a file name
// stays part of the name, and a path starting "//" names no URI authority.
std::string read_only_uri(const std::string& file) {
  std::error_code ec;
  const std::string abs = std::filesystem::absolute(file, ec).string();
  std::string uri = "file://";
  static const char* hex = "0123456789ABCDEF";
  for (unsigned char c : ec ? file : abs) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '~' || c == '-') {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += hex[c >> 4];
      uri += hex[c & 15];
    }
  }
  return uri + "?mode=ro&immutable=1";
}

}  // namespace

Db::Db(const std::string& file, Mode mode, std::string name)
    : name_(name.empty() ? file : std::move(name)) {
  const std::string target = mode == Mode::ReadOnly ? read_only_uri(file) : file;
  const int flags =
      SQLITE_OPEN_NOMUTEX |
      (mode == Mode::ReadOnly ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI : SQLITE_OPEN_READWRITE) |
      (mode == Mode::Create ? SQLITE_OPEN_CREATE : 0);
  const int rc = sqlite3_open_v2(target.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(escaped_text(name_, 512) + ": cannot open: " + msg);
  }
  sqlite3_extended_result_codes(db_, 1);
  // Hardening before the first read of the file (see the header).
  int ignored = 0;
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, &ignored);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &ignored);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &ignored);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_VIEW, 0, &ignored);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, &ignored);
  sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
  sqlite3_limit(db_, SQLITE_LIMIT_ATTACHED, 0);
  try {
    // Sorts and temporary indexes in memory: nothing of a history goes to a
    // temporary file elsewhere either.
    exec("PRAGMA temp_store = MEMORY");
    if (mode == Mode::Copy) {
      // Before the first write, so no journal file is ever created.
      exec("PRAGMA journal_mode = MEMORY");
      exec("PRAGMA synchronous = OFF");
    }
  } catch (...) {
    sqlite3_close(db_);  // the destructor does not run for a throwing constructor
    throw;
  }
}

Db::~Db() { sqlite3_close(db_); }

int64_t Db::total_changes() const { return sqlite3_total_changes64(db_); }

void Db::fail(const std::string& what) const { fail(what, sqlite3_extended_errcode(db_)); }

void Db::fail(const std::string& what, int code) const {
  std::string msg = sqlite3_errmsg(db_);
  if ((code & 0xff) == SQLITE_NOTADB || (code & 0xff) == SQLITE_CORRUPT)
    msg += " (not a kvbench history, or damaged)";
  throw InputError(escaped_text(name_, 512) + ": " + what + ": " + escaped_text(msg, 512));
}

void Db::exec(std::string_view sql) const {
  Stmt s(*this, sql, std::string(sql.substr(0, 40)));
  while (s.step()) {
  }
}

Stmt::Stmt(const Db& db, std::string_view sql, std::string what) : db_(db), what_(std::move(what)) {
  const int rc =
      sqlite3_prepare_v2(db.handle(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) db.fail(what_, rc);
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt& Stmt::bind(int index, std::string_view text) {
  if (sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()),
                        SQLITE_TRANSIENT) != SQLITE_OK)
    db_.fail(what_);
  return *this;
}

Stmt& Stmt::bind(int index, int64_t value) {
  if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK) db_.fail(what_);
  return *this;
}

Stmt& Stmt::bind(int index, double value) {
  if (sqlite3_bind_double(stmt_, index, value) != SQLITE_OK) db_.fail(what_);
  return *this;
}

Stmt& Stmt::bind_null(int index) {
  if (sqlite3_bind_null(stmt_, index) != SQLITE_OK) db_.fail(what_);
  return *this;
}

bool Stmt::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(what_, rc);
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void Stmt::bad_column(int column, const char* expected) const {
  const char* name = sqlite3_column_name(stmt_, column);
  throw InputError(escaped_text(db_.path(), 512) + ": " + what_ + "." + (name ? name : "?") +
                   ": expected " + expected + " (not a kvbench history, or damaged)");
}

bool Stmt::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

std::string Stmt::text(int column) const {
  if (sqlite3_column_type(stmt_, column) != SQLITE_TEXT) bad_column(column, "text");
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  const int n = sqlite3_column_bytes(stmt_, column);
  return p ? std::string(p, static_cast<size_t>(n)) : std::string();
}

int64_t Stmt::integer(int column) const {
  if (sqlite3_column_type(stmt_, column) != SQLITE_INTEGER) bad_column(column, "an integer");
  return sqlite3_column_int64(stmt_, column);
}

double Stmt::real(int column) const {
  const int t = sqlite3_column_type(stmt_, column);
  if (t != SQLITE_FLOAT && t != SQLITE_INTEGER) bad_column(column, "a number");
  return sqlite3_column_double(stmt_, column);
}

std::optional<int64_t> Stmt::optional_integer(int column) const {
  if (is_null(column)) return std::nullopt;
  return integer(column);
}

std::optional<std::string> Stmt::optional_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return text(column);
}

Transaction::Transaction(const Db& db, Kind kind) : db_(db) {
  db.exec(kind == Kind::Write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
}

Transaction::~Transaction() {
  if (open_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

}  // namespace kvbench::history
