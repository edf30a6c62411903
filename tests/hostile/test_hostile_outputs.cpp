// Hostile input, round three (issue 35), classes 1, 2 and 10: output paths
// that would open a pipe through gnuplot, plots written through hard links,
// and what interrupted processes leave behind (temporaries, a gnuplot that
// outlives kvbench, exit codes of signals).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/encode/gnuplot.h"
#include "model/common/error.h"
#include "tests/hostile/hostile_support.h"
#include "tests/support/cli_run.h"
#include "tests/support/reference_llama.h"

namespace kvbench::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The only run folder under `parent`.
std::string only_folder(const std::string& parent) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(parent))
    if (e.is_directory()) found.push_back(e.path().string());
  EXPECT_EQ(found.size(), 1u) << parent;
  return found.empty() ? "" : found.front();
}

// The plots a finished run folder must hold (PNG and SVG of each figure).
void expect_plots(const std::string& run) {
  for (const char* f :
       {"plots/heatmaps-task1.png", "plots/score-vs-memory.svg", "plots/speed.png"}) {
    std::error_code ec;
    EXPECT_TRUE(fs::is_regular_file(run + "/" + f, ec)) << run << "/" << f;
    EXPECT_GT(fs::file_size(run + "/" + f, ec), 100u) << run << "/" << f;
  }
}

// The "*.tmp.<digits>" files under `dir` (none may be left).
std::vector<std::string> temporaries_under(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const auto at = name.rfind(".tmp.");
    if (at != std::string::npos && at + 5 < name.size() &&
        name.find_first_not_of("0123456789", at + 5) == std::string::npos)
      out.push_back(e.path().string());
  }
  return out;
}

// A pid no process has now (a child that has exited and been reaped).
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) _exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

// --- class 1: an output path that begins with '|' --------------------------

// Every way the campaign found to hand gnuplot an output path of the
// attacker's choosing: the path reaches gnuplot absolute, so '|' is part of
// a file name, and nothing runs. The work is done as asked, in a folder
// literally named that way.
TEST(HostileOutputs, OutputPathsBeginningWithAPipeRunNothing) {
  const std::string dir = scratch("pipe-paths");
  // Spelling k would create PWNED<k> through a shell.
  const auto cmd = [&](int k) { return "|touch " + dir + "/PWNED" + std::to_string(k); };
  const auto pwned = [&] {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind("PWNED", 0) == 0) return true;
    return false;
  };
  // 1. "output" in a shared config.
  {
    tiny_experiment(dir, ", \"output\": \"" + cmd(1) + ";x\"");
    const auto r = run_kvbench_in(dir, "run tiny.json -q");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_FALSE(pwned());
    expect_plots(only_folder(dir + "/" + cmd(1) + ";x"));
  }
  // 2. --set output=..., 3. run --out.
  for (const std::string& how :
       {"--set 'output=\"" + cmd(2) + ";x\"'", "--out '" + cmd(3) + ";x'"}) {
    const auto r = run_kvbench_in(dir, "run tiny.json -q --set 'output=\"out\"' " + how);
    EXPECT_EQ(r.code, 0) << how << ": " << r.err;
    EXPECT_FALSE(pwned()) << how;
  }
  expect_plots(only_folder(dir + "/" + cmd(2) + ";x"));
  expect_plots(only_folder(dir + "/" + cmd(3) + ";x"));
  // 4. merge -o, 5. report of a folder under such a name.
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  {
    const auto r = run_kvbench_in(dir, "merge " + run + " -o '" + cmd(4) + ";z'");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_FALSE(pwned());
    expect_plots(dir + "/" + cmd(4) + ";z");
  }
  {
    const std::string parent = cmd(5) + ";y";
    fs::create_directories(dir + "/" + parent);
    const std::string name = fs::path(run).filename().string();
    const std::string moved = dir + "/" + parent + "/" + name;
    fs::rename(run, moved);
    for (const char* f : {"plots/heatmaps-task1.png", "plots/speed.svg"})
      fs::remove(moved + "/" + f);
    const auto r = run_kvbench_in(dir, "report '" + parent + "/" + name + "'");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_FALSE(pwned());
    expect_plots(moved);
    // 6. history plot -o: once through the history, into the working directory.
    ASSERT_EQ(run_kvbench_in(dir, "history add '" + moved + "' --db h.sqlite").code, 0);
    const auto p = run_kvbench_in(dir, "history plot --db h.sqlite -o '" + cmd(6) + ";q.png'");
    EXPECT_EQ(p.code, 0) << p.err;
    EXPECT_FALSE(pwned());
    EXPECT_GT(fs::file_size(dir + "/" + cmd(6) + ";q.png"), 100u);
  }
  EXPECT_TRUE(temporaries_under(dir).empty());
}

// Other spellings: a leading '~' (gnuplot expands it) and a leading space
// stay literal folder names; a line break in a path is refused before
// anything is written (gnuplot's single-quoted strings have no escapes, so
// the plots would go to another file).
TEST(HostileOutputs, OtherSpellingsOfAnOutputPath) {
  const std::string dir = scratch("pipe-spellings");
  tiny_experiment(dir);
  for (const std::string out : {"~", " |touch PWNED;x", "a/|b"}) {
    const auto r = run_kvbench_in(dir, "run tiny.json -q --out '" + out + "'");
    EXPECT_EQ(r.code, 0) << out << ": " << r.err;
    expect_plots(only_folder(dir + "/" + out));
  }
  EXPECT_FALSE(fs::exists(dir + "/PWNED"));
  const auto before = test::tree(dir);
  expect_input_error(run_kvbench_in(dir, "run tiny.json -q --out \"$(printf 'a\\nb')\""),
                     "must not contain control characters");
  EXPECT_TRUE(test::same_tree(before, test::tree(dir)));
}

// The sink itself: absolute whatever it is given, refused with a control
// character or invalid UTF-8.
TEST(HostileOutputs, GnuplotOutputIsAbsoluteAndOneLiteral) {
  for (const std::string p : {"|touch X;q.png", "~/x.png", " |x", "plots/a.png", "'quoted'"}) {
    const std::string q = gnuplot_output(p);
    SCOPED_TRACE(q);
    EXPECT_EQ(q.substr(0, 2), "'/");
    EXPECT_EQ(q.back(), '\'');
  }
  EXPECT_EQ(gnuplot_output("/a/b'c.png"), "'/a/b''c.png'");
  for (const std::string& p : {std::string("a\nb.png"), std::string("a\rb"), std::string("a\x01"),
                               std::string("a\0b", 3), std::string("\xff.png")})
    EXPECT_THROW(gnuplot_output(p), InputError) << p;
}

// --- class 2: plots are renamed into place, never written through a link ----

TEST(HostileOutputs, PlotsNeverWriteThroughAHardLink) {
  const std::string dir = scratch("hard-links");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  // The campaign's reproducer: a hard link from a plot to a file outside.
  const std::string victim = dir + "/victim.txt";
  std::ofstream(victim) << "precious\n";
  fs::remove(run + "/plots/heatmaps-task1.png");
  fs::create_hard_link(victim, run + "/plots/heatmaps-task1.png");
  const auto r = run_kvbench("report " + run);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(victim), "precious\n");
  EXPECT_EQ(slurp(run + "/plots/heatmaps-task1.png").substr(1, 3), "PNG");
  EXPECT_EQ(fs::hard_link_count(victim), 1u);

  // The realistic one: a copy sharing its files (cp -al), a label edited in
  // the copy, the copy re-rendered: the original's plots stay as they were.
  const std::string copy = dir + "/copy";
  ASSERT_EQ(std::system(("cp -al '" + run + "' '" + copy + "'").c_str()), 0);
  std::map<std::string, std::string> original;
  for (const auto& e : fs::directory_iterator(run + "/plots"))
    original[e.path().filename().string()] = slurp(e.path().string());
  for (const auto& e : fs::directory_iterator(copy + "/cells")) {
    json c = json::parse(slurp(e.path().string()));
    if (c["policy"]["label"] != "win") continue;
    c["policy"]["label"] = "a renamed window";
    fs::remove(e.path());  // the edit an editor makes: a new file
    std::ofstream(e.path()) << c.dump();
  }
  ASSERT_EQ(run_kvbench("report " + copy).code, 0);
  for (const auto& [name, bytes] : original)
    EXPECT_EQ(slurp(run + "/plots/" + name), bytes) << name;
  EXPECT_NE(slurp(copy + "/plots/score-vs-memory.svg"), original["score-vs-memory.svg"]);

  // history plot -o onto a hard link of a file outside: replaced, not written through.
  ASSERT_EQ(run_kvbench("history add " + run + " --db " + dir + "/h.sqlite").code, 0);
  const std::string victim2 = dir + "/victim2.txt";
  std::ofstream(victim2) << "precious\n";
  fs::create_hard_link(victim2, dir + "/trend.png");
  ASSERT_EQ(run_kvbench("history plot --db " + dir + "/h.sqlite -o " + dir + "/trend.png").code, 0);
  EXPECT_EQ(slurp(victim2), "precious\n");
  EXPECT_EQ(slurp(dir + "/trend.png").substr(1, 3), "PNG");
}

// --- class 10: temporaries and orphans ---------------------------------------

// What a kill -9 left (a temporary of a process that is gone) is removed by
// the next write of the same file; a live process's temporary stays.
TEST(HostileOutputs, StaleTemporariesAreRemovedByTheNextWrite) {
  const std::string dir = scratch("stale");
  const std::string text = dir + "/doc.txt";
  std::ofstream(text) << "The passkey is 4711. Remember it.\n";
  const std::string dead = std::to_string(dead_pid()), alive = std::to_string(::getpid());
  // cache save -o c.kvc
  const std::string kvc = dir + "/c.kvc";
  std::ofstream(kvc + ".tmp." + dead) << "half a snapshot";
  std::ofstream(kvc + ".tmp." + alive) << "someone else's";
  const auto save = run_kvbench("cache save --model " + test::tiny_model_path() + " --context " +
                                text + " -o " + kvc);
  ASSERT_EQ(save.code, 0) << save.err;
  EXPECT_FALSE(fs::exists(kvc + ".tmp." + dead));
  EXPECT_TRUE(fs::exists(kvc + ".tmp." + alive));
  // history plot -o p.png
  const std::string run = tiny_run(dir);
  ASSERT_EQ(run_kvbench("history add " + run + " --db " + dir + "/h.sqlite").code, 0);
  const std::string png = dir + "/p.png";
  std::ofstream(png + ".tmp." + dead) << "half a png";
  ASSERT_EQ(run_kvbench("history plot --db " + dir + "/h.sqlite -o " + png).code, 0);
  EXPECT_FALSE(fs::exists(png + ".tmp." + dead));
  // A run folder's plots/ (swept under the folder's lock).
  std::ofstream(run + "/plots/heatmaps-task1.png.tmp." + dead) << "half a png";
  ASSERT_EQ(run_kvbench("report " + run).code, 0);
  EXPECT_TRUE(temporaries_under(run).empty());
}

// A stand-in for gnuplot (first on PATH): records its pid, reads its script,
// then sleeps before it would write a marker. kvbench killed with -9 while
// it sleeps takes it along (PR_SET_PDEATHSIG), so nothing writes into the
// run folder once its lock is free; SIGTERM kills it too, removes the
// temporaries and exits 143.
class SlowGnuplot {
 public:
  explicit SlowGnuplot(const std::string& dir) : bin_(dir + "/bin"), marker_(dir + "/marker") {
    fs::create_directories(bin_);
    pid_file_ = dir + "/gnuplot.pid";
    // (Its own children must not hold the run folder's lock, which it
    // inherits: the descriptors above 2 are closed before it sleeps.)
    std::ofstream(bin_ + "/gnuplot")
        << "#!/bin/bash\necho $$ > '" << pid_file_ << "'\ncat > /dev/null\n"
        << "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done\n"
        << "sleep 3\ntouch '" << marker_ << "'\n";
    fs::permissions(bin_ + "/gnuplot", fs::perms::owner_all);
  }
  // `kvbench args` in the background with this gnuplot first on PATH; its pid.
  pid_t start(const std::vector<std::string>& args) const {
    return spawn_kvbench(args, "/dev/null", bin_);
  }
  // gnuplot's pid once it started (0 after 20 s without).
  pid_t wait_started() const {
    for (int i = 0; i < 400; ++i) {
      std::ifstream in(pid_file_);
      pid_t pid = 0;
      if (in >> pid && pid > 0) return pid;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return 0;
  }
  bool marker_written() const { return fs::exists(marker_); }

 private:
  std::string bin_, marker_, pid_file_;
};

bool process_gone_within(pid_t pid, int ms) {
  for (int waited = 0; waited <= ms; waited += 20) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(HostileOutputs, GnuplotDiesWithKvbench) {
  const std::string dir = scratch("orphans");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  const SlowGnuplot gnuplot(dir);
  // `kvbench report` sent `sig` once its gnuplot runs: gnuplot's pid (0: it
  // never started, and kvbench is killed) and kvbench's wait status.
  const auto report_signalled = [&](int sig) {
    const pid_t kv = gnuplot.start({"report", run});
    const pid_t gp = gnuplot.wait_started();
    ::kill(kv, gp > 0 ? sig : SIGKILL);
    int status = 0;
    ::waitpid(kv, &status, 0);
    return std::pair{gp, status};
  };

  // kill -9 while gnuplot works: gnuplot goes too, the lock is free at once.
  {
    const auto [gp, status] = report_signalled(SIGKILL);
    ASSERT_GT(gp, 0);
    EXPECT_TRUE(process_gone_within(gp, 2000)) << "gnuplot outlived kvbench";
    const auto again = run_kvbench("report " + run);  // the real gnuplot: the lock is free
    EXPECT_EQ(again.code, 0) << again.err;
    EXPECT_TRUE(temporaries_under(run).empty());
  }
  // SIGTERM: gnuplot killed, temporaries removed, exit 143.
  {
    fs::remove(dir + "/gnuplot.pid");
    const auto [gp, status] = report_signalled(SIGTERM);
    ASSERT_GT(gp, 0);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 143);
    EXPECT_TRUE(process_gone_within(gp, 2000)) << "gnuplot outlived kvbench";
    EXPECT_TRUE(temporaries_under(run).empty());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  EXPECT_FALSE(gnuplot.marker_written()) << "a gnuplot went on after kvbench ended";
}

// SIGTERM and SIGINT during a run: the exit codes of a signal (143, 130),
// the message naming how to resume, no temporaries; the resumed run
// finishes the grid.
TEST(HostileOutputs, SignalsEndARunWithTheirExitCodes) {
  const std::string dir = scratch("signals");
  const std::string exp = tiny_experiment(dir, ", \"output\": \"" + dir + "/out\"");
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    fs::remove_all(dir + "/out");
    // Samples enough for the run to be under way when the signal comes.
    const pid_t kv = spawn_kvbench({"run", exp, "--set", "tasks.0.samples=40"}, dir + "/stderr");
    // Wait for the first cell.
    bool started = false;
    for (int i = 0; i < 600 && !started; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (fs::exists(dir + "/out"))
        for (const auto& e : fs::recursive_directory_iterator(dir + "/out"))
          started = started || e.path().parent_path().filename() == "cells";
    }
    ASSERT_TRUE(started);
    ::kill(kv, sig);
    int status = 0;
    ::waitpid(kv, &status, 0);
    ASSERT_TRUE(WIFEXITED(status)) << sig;
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
    EXPECT_NE(slurp(dir + "/stderr").find("continue with: kvbench run --resume"), std::string::npos)
        << slurp(dir + "/stderr");
    EXPECT_TRUE(temporaries_under(dir + "/out").empty());
  }
  const auto resumed = run_kvbench("run --resume " + only_folder(dir + "/out") + " -q");
  EXPECT_EQ(resumed.code, 0) << resumed.err;
}

}  // namespace
}  // namespace kvbench::test
