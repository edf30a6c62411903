// Hostile input and faults in the recall history (harness/history/): device
// nodes, FIFOs, directories, links and empty files given as the database;
// databases whose schema was altered to drop rows; times that gmtime cannot
// format, from the database and from git; kill -9 during an add. Every
// refusal is one "error:" line naming the file or field, exit code 2, and
// nothing created or changed (no "-journal" beside anything); a read never
// writes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/history/sqlite_db.h"
#include "tests/hostile/hostile_support.h"
#include "tests/support/cli_run.h"

namespace kvbench::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// One finished tiny run per test process, copied by the tests that change it.
const std::string& shared_run() {
  static const std::string run = test::tiny_run(scratch("shared-run"));
  return run;
}

// A copy of the tiny run at <dest> whose meta.json fields are replaced by
// `meta` (a new start time makes it another history run).
std::string copy_run(const std::string& dest, const json& meta) {
  fs::copy(shared_run(), dest, fs::copy_options::recursive);
  json m = json::parse(slurp(dest + "/meta.json"));
  m.update(meta);
  std::ofstream(dest + "/meta.json", std::ios::trunc) << m.dump();
  return dest;
}

// The tiny run copied into scratch folder `name`, started at `started` (so
// another history run than the tiny run itself).
std::string another_run(const std::string& name,
                        const std::string& started = "2030-01-01T00:00:00Z") {
  return copy_run(scratch(name) + "/run", {{"started_utc", started}});
}

// `kvbench history add <runs> --db <db>`, commit times unknown (--repo '').
CliResult history_add(const std::string& runs, const std::string& db) {
  return run_kvbench("history add " + runs + " --db " + db + " --repo ''");
}

// <dir>/h.sqlite holding the tiny run (commit time unknown: --repo '').
std::string tiny_history(const std::string& dir) {
  const std::string db = dir + "/h.sqlite";
  const auto r = history_add(shared_run(), db);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2 cells added"), std::string::npos) << r.out;
  return db;
}

// Runs SQL on a database file as another program would (SQLite's defaults).
void edit_db(const std::string& path, std::initializer_list<std::string> statements) {
  history::Db db(path, history::Db::Mode::Create);
  for (const std::string& s : statements) db.exec(s);
}

// The SQL text of a table as the file holds it.
std::string table_sql(const std::string& path, const std::string& table) {
  history::Db db(path, history::Db::Mode::Create);
  history::Stmt s(db, "SELECT sql FROM sqlite_schema WHERE name = ?1", "sqlite_schema");
  s.bind(1, table);
  return s.step() ? s.text(0) : "";
}

// Removes a "-journal" an unfixed kvbench left beside a device (only a
// regular file: never a device node).
void remove_leftover_journal(const std::string& device) {
  struct stat st {};
  const std::string journal = device + "-journal";
  if (::lstat(journal.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(journal.c_str());
}

// While alive, keeps opening `fifo` for writing and closing it: a kvbench
// that opens it for reading (an unfixed one) sees end-of-file instead of
// waiting forever, so the test fails rather than hangs.
class FifoUnblocker {
 public:
  explicit FifoUnblocker(std::string fifo)
      : fifo_(std::move(fifo)), thread_([this] {
          while (!stop_) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            const int fd = ::open(fifo_.c_str(), O_WRONLY | O_NONBLOCK);
            if (fd >= 0) ::close(fd);
          }
        }) {}
  ~FifoUnblocker() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::string fifo_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::vector<std::string> temporaries_of(const std::string& db) {
  std::vector<std::string> out;
  const std::string prefix = fs::path(db).filename().string() + ".tmp.";
  for (const auto& e : fs::directory_iterator(fs::path(db).parent_path()))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().string());
  return out;
}

// --- attack 3: device files, journals beside them, reads that write ---------

TEST(HostileHistory, AddToDevZeroIsRefusedAndLeavesNoJournal) {
  remove_leftover_journal("/dev/zero");
  expect_input_error(run_kvbench("history add " + shared_run() + " --db /dev/zero --repo ''"),
                     "/dev/zero: exists and is not a regular file (a device)");
  EXPECT_FALSE(fs::exists("/dev/zero-journal"));
  remove_leftover_journal("/dev/zero");
}

TEST(HostileHistory, ShowOfDevNullIsARefusedReadThatWritesNothing) {
  remove_leftover_journal("/dev/null");
  expect_input_error(run_kvbench("history show --db /dev/null"),
                     "/dev/null: not a history database: a device");
  EXPECT_FALSE(fs::exists("/dev/null-journal"));
  const std::string dir = scratch("devnull-plot");
  expect_input_error(run_kvbench("history plot --db /dev/null -o " + dir + "/p.png"),
                     "/dev/null: not a history database: a device");
  EXPECT_FALSE(fs::exists("/dev/null-journal"));
  EXPECT_TRUE(tree(dir).empty());
  remove_leftover_journal("/dev/null");
}

TEST(HostileHistory, RunWithHistoryDevFullFailsBeforeTheRun) {
  remove_leftover_journal("/dev/full");
  const std::string dir = scratch("devfull");
  const auto r = run_kvbench("run " + test::tiny_experiment(dir) + " -q --out " + dir +
                             "/out --history /dev/full");
  expect_input_error(r, "/dev/full: exists and is not a regular file (a device)");
  EXPECT_FALSE(fs::exists("/dev/full-journal"));
  EXPECT_FALSE(fs::exists(dir + "/out"));  // refused before the run
  remove_leftover_journal("/dev/full");
}

TEST(HostileHistory, AnEmptyFileIsNotAHistoryAndStaysEmpty) {
  const std::string dir = scratch("empty");
  const std::string db = dir + "/empty.sqlite";
  std::ofstream(db).close();
  const auto before = tree(dir);
  expect_input_error(run_kvbench("history show --db " + db),
                     db + ": not a history database (empty file)");
  expect_input_error(run_kvbench("history plot --db " + db + " -o " + dir + "/p.svg"),
                     db + ": not a history database (empty file)");
  // Adding to it is refused too, saying how to start a history.
  expect_input_error(history_add(shared_run(), db),
                     db + ": not a history database (empty file): remove it, or name a new file");
  expect_input_error(run_kvbench("run " + test::tiny_experiment(scratch("empty-exp")) +
                                 " -q --out " + dir + "/out --history " + db),
                     db + ": not a history database (empty file)");
  EXPECT_EQ(tree(dir), before);
  EXPECT_EQ(fs::file_size(db), 0u);
  // A missing one: one line, nothing created.
  expect_input_error(run_kvbench("history show --db " + dir + "/none.sqlite"),
                     dir + "/none.sqlite: cannot open");
  EXPECT_EQ(tree(dir), before);
}

// Other spellings: a FIFO (which would block), a directory, links to a
// device and to a good history; none reaches SQLite.
TEST(HostileHistory, FifosDirectoriesAndLinksAreRefusedWithoutBlocking) {
  const std::string dir = scratch("special-db");
  const std::string fifo = dir + "/fifo.sqlite";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::create_directories(dir + "/dir.sqlite");
  fs::create_symlink("/dev/null", dir + "/null.sqlite");
  const std::string good = tiny_history(scratch("special-db-good"));
  fs::create_symlink(good, dir + "/link.sqlite");
  remove_leftover_journal("/dev/null");
  const auto before = tree(dir);
  const auto good_before = slurp(good);
  {
    const FifoUnblocker unblock(fifo);
    for (const std::string& cmd :
         {std::string("history show --db "), "history plot -o " + dir + "/x.png --db "})
      expect_input_error(run_kvbench(cmd + fifo), fifo + ": not a history database: a FIFO");
    expect_input_error(run_kvbench("history add " + shared_run() + " --repo '' --db " + fifo),
                       fifo + ": exists and is not a regular file (a FIFO)");
  }
  expect_input_error(run_kvbench("history show --db " + dir + "/dir.sqlite"),
                     dir + "/dir.sqlite: not a history database: a directory");
  expect_input_error(
      run_kvbench("history add " + shared_run() + " --repo '' --db " + dir + "/dir.sqlite"),
      dir + "/dir.sqlite: exists and is not a regular file (a directory)");
  for (const char* link : {"/null.sqlite", "/link.sqlite"}) {
    expect_input_error(run_kvbench("history show --db " + dir + link),
                       dir + link + ": not a history database: a symbolic link");
    expect_input_error(run_kvbench("history add " + shared_run() + " --repo '' --db " + dir + link),
                       dir + link + ": exists and is not a regular file (a symbolic link)");
  }
  EXPECT_FALSE(fs::exists("/dev/null-journal"));
  EXPECT_EQ(tree(dir), before);
  EXPECT_EQ(slurp(good), good_before);
  remove_leftover_journal("/dev/null");
}

// A read of a good history changes nothing and creates nothing: not the
// file, not its time stamp, no journal (it is opened read-only, immutable).
// Neither does an add that finds every cell already there.
TEST(HostileHistory, ReadingAHistoryWritesNothing) {
  const std::string dir = scratch("read-only");
  const std::string db = tiny_history(dir);
  const auto before = tree(dir);
  const auto mtime = fs::last_write_time(db);
  const auto r = run_kvbench("history show --db " + db);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1 run, 2 cells, 1 commit."), std::string::npos) << r.out;
  EXPECT_EQ(tree(dir), before);
  EXPECT_EQ(fs::last_write_time(db), mtime);
  // Re-adding what is there writes nothing either (the copy is discarded).
  const auto again = history_add(shared_run(), db);
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("0 cells added, 2 already in the history"), std::string::npos)
      << again.out;
  EXPECT_EQ(tree(dir), before);
  EXPECT_EQ(fs::last_write_time(db), mtime);
}

// --- attack 4: altered definitions that drop rows ---------------------------

// The reproducer: the history's own index made UNIQUE under its own
// name (a check of names alone accepts it): at most one cell per
// configuration and task, so every later run's cells would be "already in
// the history". A new name for it is refused as well.
TEST(HostileHistory, AnExtraUniqueIndexIsRefusedNotObeyed) {
  const std::string dir = scratch("unique");
  const std::string db = tiny_history(dir);
  edit_db(db, {"DROP INDEX cells_by_group",
               "CREATE UNIQUE INDEX cells_by_group ON cells(configuration, task)"});
  const std::string again = another_run("unique-run");
  const auto before = tree(dir);
  expect_input_error(history_add(again, db),
                     db + ": not a kvbench history: index cells_by_group is not defined as "
                          "kvbench defines it");
  expect_input_error(run_kvbench("history show --db " + db),
                     "index cells_by_group is not defined as kvbench defines it");
  EXPECT_EQ(tree(dir), before);
  // Beside the history's own index, under a name of its own.
  const std::string other = tiny_history(scratch("unique-other"));
  edit_db(other, {"CREATE UNIQUE INDEX cells_once ON cells(configuration, task)"});
  expect_input_error(history_add(again, other),
                     other + ": not a kvbench history: it holds index cells_once");
}

TEST(HostileHistory, ACheckConstraintIsRefusedNotObeyed) {
  const std::string dir = scratch("check");
  const std::string db = tiny_history(dir);
  // cells rebuilt with CHECK(score < 0.5): every passing cell would be
  // dropped by INSERT OR IGNORE.
  std::string sql = table_sql(db, "cells");
  const std::string col = "score REAL NOT NULL";
  ASSERT_NE(sql.find(col), std::string::npos) << sql;
  sql.replace(sql.find(col), col.size(), col + " CHECK(score < 0.5)");
  edit_db(db,
          {"DROP TABLE cells", sql, "CREATE INDEX cells_by_group ON cells(configuration, task)"});
  const std::string again = another_run("check-run");
  const auto before = tree(dir);
  expect_input_error(history_add(again, db),
                     db + ": not a kvbench history: table cells is not defined as kvbench "
                          "defines it");
  EXPECT_EQ(tree(dir), before);
}

// Other spellings: a column's type changed, a trigger, a view, a missing
// index; each names its object, for reading and for adding.
TEST(HostileHistory, AlteredColumnsTriggersAndViewsAreRefused) {
  const std::string again = another_run("altered-run");
  struct Case {
    const char* name;
    std::vector<std::string> sql;
    const char* object;
  };
  std::vector<Case> cases = {
      {"trigger",
       {"CREATE TRIGGER forget AFTER INSERT ON cells BEGIN DELETE FROM cells; END"},
       "trigger forget"},
      {"view", {"CREATE VIEW passing AS SELECT * FROM cells WHERE score > 0.5"}, "view passing"},
      {"no-index", {"DROP INDEX cells_by_group"}, "index cells_by_group is missing"},
  };
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string dir = scratch(std::string("altered-") + c.name);
    const std::string db = tiny_history(dir);
    for (const std::string& s : c.sql) edit_db(db, {s});
    const auto before = tree(dir);
    expect_input_error(history_add(again, db), c.object);
    expect_input_error(run_kvbench("history show --db " + db), c.object);
    EXPECT_EQ(tree(dir), before);
  }
  // runs.commit_time as TEXT: a date could then be any string.
  const std::string dir = scratch("altered-type");
  const std::string db = tiny_history(dir);
  std::string sql = table_sql(db, "runs");
  const std::string col = "commit_time INTEGER";
  ASSERT_NE(sql.find(col), std::string::npos) << sql;
  sql.replace(sql.find(col), col.size(), "commit_time TEXT");
  edit_db(db, {"CREATE TABLE runs_old AS SELECT * FROM runs", "DROP TABLE runs", sql,
               "INSERT INTO runs SELECT * FROM runs_old", "DROP TABLE runs_old"});
  const auto before = tree(dir);
  expect_input_error(
      run_kvbench("history show --db " + db),
      db + ": not a kvbench history: table runs is not defined as kvbench defines it");
  expect_input_error(history_add(again, db), "table runs is not defined as kvbench defines it");
  EXPECT_EQ(tree(dir), before);
}

// A command's folders land together or not at all: a damaged second folder
// leaves the history as it was, and no line says the first was added.
TEST(HostileHistory, AFailedAddWritesNothing) {
  const std::string dir = scratch("failed-add");
  const std::string db = tiny_history(dir);
  const std::string good = another_run("failed-add-good");
  const std::string bad = another_run("failed-add-bad", "2030-01-02T00:00:00Z");
  const std::string cell = test::cell_files(bad)[0];
  std::ofstream(cell, std::ios::trunc) << "{\"id\": ";
  const auto before = tree(dir);
  expect_input_error(history_add(good + " " + bad, db), cell);
  EXPECT_EQ(tree(dir), before);
  // A new database is not created either.
  expect_input_error(
      run_kvbench("history add " + good + " " + bad + " --db " + dir + "/new.sqlite --repo ''"),
      cell);
  EXPECT_EQ(tree(dir), before);
}

// --- attack 7: times that gmtime cannot format ------------------------------

TEST(HostileHistory, AHugeCommitTimeInTheDatabaseIsAnErrorNotAnAbort) {
  const std::string dir = scratch("huge-time");
  const std::string db = tiny_history(dir);
  edit_db(db, {"UPDATE runs SET commit_time = 9223372036854775807"});
  const auto before = tree(dir);
  expect_input_error(run_kvbench("history show --db " + db),
                     db + ": runs.commit_time: 9223372036854775807 is not unix seconds");
  expect_input_error(run_kvbench("history plot --db " + db + " -o " + dir + "/p.png"),
                     db + ": runs.commit_time: 9223372036854775807 is not unix seconds");
  EXPECT_EQ(tree(dir), before);
}

// Other spellings: a negative commit time, one stored as a real number (SQLite
// keeps no NaN: 0.0/0.0 is NULL, an unknown date, which is fine), start
// times of days that do not exist or out of range.
TEST(HostileHistory, NegativeNonIntegerAndImpossibleTimesAreErrors) {
  const std::string dir = scratch("bad-times");
  const std::string db = tiny_history(dir);
  const std::string pristine = slurp(db);
  const auto restore = [&] { std::ofstream(db, std::ios::binary | std::ios::trunc) << pristine; };
  struct Case {
    std::string update, error;
  };
  const std::vector<Case> cases = {
      {"UPDATE runs SET commit_time = -1", "runs.commit_time: -1 is not unix seconds"},
      {"UPDATE runs SET commit_time = 253402300800", "runs.commit_time: 253402300800 is not"},
      {"UPDATE runs SET commit_time = 1e999", "runs.commit_time: expected an integer"},
      {"UPDATE runs SET started_utc = '2026-02-30T07:00:00Z'", "runs.started_utc: '2026-02-30"},
      {"UPDATE runs SET started_utc = '2026-11-21T07:00:60Z'", "runs.started_utc:"},
      {"UPDATE runs SET started_utc = '+026-11-21T07:00:00Z'", "runs.started_utc:"},
      {"UPDATE runs SET started_utc = 'NaN'", "runs.started_utc: 'NaN'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.update);
    restore();
    edit_db(db, {c.update});
    const auto before = tree(dir);
    expect_input_error(run_kvbench("history show --db " + db), db + ": " + c.error);
    EXPECT_EQ(tree(dir), before);
  }
  // NaN is stored as NULL: the run's start stands in for the date.
  restore();
  edit_db(db, {"UPDATE runs SET commit_time = 0.0 / 0.0"});
  const auto r = run_kvbench("history show --db " + db);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(" (run) |"), std::string::npos) << r.out;
}

// A commit whose committer time git gives as 99999999999999999: refused when
// it is added (naming the field), never stored to abort a later show.
TEST(HostileHistory, AHugeCommitterTimeFromGitIsAnErrorNotAnAbort) {
  const std::string dir = scratch("git-time");
  const std::string repo = dir + "/repo";
  const std::string git = "git -C " + repo + " -c user.name=t -c user.email=t@t.invalid ";
  ASSERT_EQ(
      std::system(("git init -q " + repo + " && GIT_COMMITTER_DATE='@99999999999999999 +0000' " +
                   git + "commit -q --allow-empty -m forged && " + git + "rev-parse HEAD > " + dir +
                   "/head")
                      .c_str()),
      0);
  std::string head = slurp(dir + "/head");
  head.resize(40);
  const std::string run = copy_run(dir + "/run", {{"git_commit", head}});
  const std::string db = dir + "/h.sqlite";
  expect_input_error(run_kvbench("history add " + run + " --db " + db + " --repo " + repo),
                     "commit " + head +
                         ": commit_time: git gives the committer time "
                         "'99999999999999999'");
  EXPECT_FALSE(fs::exists(db));
  EXPECT_TRUE(temporaries_of(db).empty());
  // Had an older kvbench stored it, show and plot refuse it (no abort).
  const std::string stored = tiny_history(scratch("git-time-db"));
  edit_db(stored, {"UPDATE runs SET commit_time = 99999999999999999"});
  for (const std::string& cmd :
       {"history show --db " + stored, "history plot --db " + stored + " -o " + dir + "/p.svg"})
    expect_input_error(run_kvbench(cmd), "runs.commit_time: 99999999999999999 is not unix seconds");
  EXPECT_FALSE(fs::exists(dir + "/p.svg"));
}

// --- never in place: kill -9 during an add -----------------------------------

// A writer stopped once its temporary exists, then killed: the database is
// what it was, only the temporary is left, and the next add removes it (its
// process is gone) and lands. A temporary of a live process stays.
TEST(HostileHistory, KillDashNineDuringAddLeavesTheDatabaseIntact) {
  const std::string dir = scratch("kill-add");
  const std::string db = tiny_history(dir);
  const std::string before = slurp(db);
  // Many folders, so the add takes long enough to be caught half way.
  fs::create_directories(dir + "/runs");
  std::vector<std::string> runs;
  for (int i = 0; i < 60; ++i)
    runs.push_back(copy_run(dir + "/runs/r" + std::to_string(i),
                            {{"started_utc", "2030-01-01T00:" + std::string(i < 10 ? "0" : "") +
                                                 std::to_string(i) + ":00Z"}}));
  const std::string temp_of_live = db + ".tmp.1";  // pid 1 is always alive
  std::ofstream(temp_of_live) << "someone else's";
  bool caught = false;
  for (int attempt = 0; attempt < 5 && !caught; ++attempt) {
    std::vector<std::string> args = {"history", "add"};
    args.insert(args.end(), runs.begin(), runs.end());
    args.insert(args.end(), {"--repo", "", "--db", db});
    const pid_t pid = spawn_kvbench(args);
    const std::string temp = db + ".tmp." + std::to_string(pid);
    for (int i = 0; i < 5000 && !caught; ++i) {
      ::kill(pid, SIGSTOP);
      if (fs::exists(temp)) {
        caught = true;
        break;
      }
      if (::waitpid(pid, nullptr, WNOHANG) == pid) break;  // finished before we caught it
      ::kill(pid, SIGCONT);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    if (!caught) {
      // It finished: start again from the one-run history.
      std::ofstream(db, std::ios::binary | std::ios::trunc) << before;
      continue;
    }
    EXPECT_EQ(slurp(db), before);  // untouched
    EXPECT_TRUE(fs::exists(temp));
    EXPECT_FALSE(fs::exists(db + "-journal"));
  }
  ASSERT_TRUE(caught) << "no add was caught with its temporary (a writer in place?)";
  const auto shown = run_kvbench("history show --db " + db);
  EXPECT_EQ(shown.code, 0) << shown.err;
  EXPECT_NE(shown.out.find("1 run, 2 cells"), std::string::npos) << shown.out;
  // The next add removes the dead writer's temporary, keeps the live one's.
  const auto r = history_add(runs[0], db);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2 cells added, 0 already in the history"), std::string::npos) << r.out;
  EXPECT_EQ(temporaries_of(db), std::vector<std::string>{temp_of_live});
  EXPECT_FALSE(fs::exists(db + "-journal"));
}

}  // namespace
}  // namespace kvbench::test
