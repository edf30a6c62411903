// Hostile input and faults (issue 17): crafted configs, run folders, cells,
// special files and names. Every refusal is one "error:" line naming the file
// or field, exit code 2, nothing written and nothing outside the folder
// touched; nothing a run folder holds is ever executed.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness/encode/gnuplot.h"
#include "harness/report/plots.h"
#include "harness/run/plan.h"
#include "harness/run/run_folder.h"
#include "harness/sha256.h"
#include "tests/hostile/forged_files.h"
#include "tests/hostile/hostile_support.h"
#include "tests/support/cli_run.h"
#include "tests/support/reference_llama.h"

namespace kvbench::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// --- class 1: nothing in a run folder or config reaches a shell --------------

TEST(Hostile, GnuplotStringsStayOneLiteral) {
  for (const std::string s :
       {"x\n!id > PWNED\n#", "a`id`b", "it's", "a\rb\tc\x01\x7f", "@macro", "\\"}) {
    const std::string q = gnuplot_string(s);
    SCOPED_TRACE(q);
    ASSERT_GE(q.size(), 2u);
    EXPECT_EQ(q.front(), '\'');
    EXPECT_EQ(q.back(), '\'');
    // Inside: no control character, and every quote doubled (so none ends the literal).
    const std::string inner = q.substr(1, q.size() - 2);
    for (char c : inner) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f);
    for (size_t i = 0; i < inner.size(); ++i)
      if (inner[i] == '\'') EXPECT_TRUE(i + 1 < inner.size() && inner[++i] == '\'');
  }
  EXPECT_EQ(gnuplot_string("x\n!id"), "'x\\n!id'");
  EXPECT_EQ(gnuplot_string("it's"), "'it''s'");
}

TEST(Hostile, TheIssueReproducerRunsNothing) {
  const std::string dir = scratch("repro");
  const std::string pwned = dir + "/PWNED";
  const auto r = run_kvbench("run " + tiny_experiment(dir) + " -q --out " + dir +
                             "/out --set 'tasks=[{\"task\":\"passkey\",\"lengths\":[128]}]' --set "
                             "'policies=[{\"spec\":\"full\",\"label\":\"x\\n!id > " +
                             pwned + "\\n#\"}]'");
  expect_input_error(r, "/policies/0/label: must not contain control characters");
  EXPECT_FALSE(fs::exists(pwned));
  EXPECT_FALSE(fs::exists(dir + "/out"));
}

TEST(Hostile, ReportOfATamperedRunFolderRunsNothingAndEscapesHtml) {
  const std::string dir = scratch("tampered");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  const std::string pwned = dir + "/PWNED";
  // Labels as a hostile colleague writes them into the cells they share.
  const std::vector<std::string> labels = {
      "x\n!touch " + pwned + "\n#", "`touch " + pwned + "2`",
      "<script>alert(1)</script>' \" EOD\nEOD\n!touch " + pwned + "3"};
  const auto files = cell_files(run);
  ASSERT_EQ(files.size(), 2u);
  for (size_t i = 0; i < files.size(); ++i) {
    json c = json::parse(slurp(files[i]));
    c["policy"]["label"] = labels[i];
    c["policy"]["base"] = labels[2];
    c["policy"]["budget"] = 64;
    std::ofstream(files[i]) << c.dump();
  }
  json config = json::parse(slurp(run + "/config.json"));
  config["description"] = "<img src=x onerror=alert(1)>";
  std::ofstream(run + "/config.json") << config.dump();
  const auto r = run_kvbench("report " + run);
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* suffix : {"", "2", "3"}) EXPECT_FALSE(fs::exists(pwned + suffix)) << suffix;
  const std::string html = slurp(run + "/report.html");
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
}

// meta.json's text reaches report.md one line each; git_dirty is a boolean.
TEST(Hostile, MetaTextStaysOneLineInTheReport) {
  const std::string dir = scratch("meta-text");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  json meta = json::parse(slurp(run + "/meta.json"));
  meta["cpu"] = "Fast CPU\n# Injected heading";
  meta["git_dirty"] = "yes";
  std::ofstream(run + "/meta.json") << meta.dump();
  expect_input_error(run_kvbench("report " + run),
                     run + "/meta.json: /git_dirty: expected true or false");
  meta["git_dirty"] = true;
  meta["invocation"] = {{"experiment", "x.json"}, {"overrides", json::array({"a=1", 2})}};
  std::ofstream(run + "/meta.json") << meta.dump();
  expect_input_error(run_kvbench("report " + run),
                     run + "/meta.json: /invocation/overrides: expected strings");
  meta["invocation"] = {{"experiment", "x.json\n# Heading"},
                        {"overrides", json::array({"description=<b>x</b>\n# Two"})}};
  std::ofstream(run + "/meta.json") << meta.dump();
  const auto r = run_kvbench("report " + run);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string md = slurp(run + "/report.md");
  EXPECT_EQ(md.find("\n# Injected heading"), std::string::npos);
  // The Markdown encoder: the newline visible, the '#' escaped (markup).
  EXPECT_NE(md.find("CPU: Fast CPU\\n\\# Injected heading"), std::string::npos);
  EXPECT_NE(md.find("(built with uncommitted changes)"), std::string::npos);
  EXPECT_EQ(md.find("\n# Heading"), std::string::npos);
  EXPECT_EQ(md.find("\n# Two"), std::string::npos);
  EXPECT_NE(md.find("As run: x.json\\n\\# Heading, changed on the command line by "),
            std::string::npos)
      << md;
  EXPECT_NE(slurp(run + "/report.html").find("description=&lt;b&gt;x&lt;/b&gt;"),
            std::string::npos);
  EXPECT_NE(slurp(run + "/report.html").find("(built with uncommitted changes)"),
            std::string::npos);
}

// compare prints markdown to a terminal: a label from a shared run folder can
// neither add table columns ('|') nor send escape sequences.
TEST(Hostile, CompareEscapesLabelsForMarkdownAndTheTerminal) {
  const std::string dir = scratch("compare-md");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  const auto files = cell_files(run);
  ASSERT_EQ(files.size(), 2u);
  for (size_t i = 0; i < files.size(); ++i) {
    json c = json::parse(slurp(files[i]));
    c["policy"]["label"] = i == 0 ? "a|b\x1b[31m" : "c | d\n| e";
    std::ofstream(files[i]) << c.dump();
  }
  const auto r = run_kvbench("compare " + run + " " + run);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_NE(r.out.find("| a\\|b\\x1b\\[31m | passkey |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| c \\| d\\n\\| e | passkey |"), std::string::npos) << r.out;
  // Every table row keeps its table's column count (the report has tables
  // of several shapes: each separator line sets the count for the rows
  // under it).
  std::istringstream in(r.out);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  size_t columns = 0, rows = 0;
  for (size_t k = 0; k < lines.size(); ++k) {
    const std::string& l = lines[k];
    if (l.rfind("|---", 0) == 0) {
      columns = static_cast<size_t>(std::count(l.begin(), l.end(), '|'));
      continue;
    }
    const bool header = k + 1 < lines.size() && lines[k + 1].rfind("|---", 0) == 0;
    if (l.rfind("| ", 0) != 0 || columns == 0 || header) continue;
    size_t pipes = 0;
    for (size_t i = 0; i < l.size(); ++i) pipes += l[i] == '|' && (i == 0 || l[i - 1] != '\\');
    EXPECT_EQ(pipes, columns) << l;
    ++rows;
  }
  EXPECT_GT(rows, 3u);
}

// --- class 2: nothing written outside the folder, no special file replaced ----

TEST(Hostile, MergeTrustsNoCellIdAsAFileName) {
  const std::string dir = scratch("merge-id");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  const auto files = cell_files(run);
  json c = json::parse(slurp(files[0]));
  c["id"] = "../../../../escaped";
  std::ofstream(files[0]) << c.dump();
  const auto before = tree(dir);
  const auto r = run_kvbench("merge " + run + " -o " + dir + "/merged");
  expect_input_error(r, files[0] + ": /id: '../../../../escaped' is not the file's name");
  EXPECT_FALSE(fs::exists(dir + "/merged"));
  EXPECT_EQ(tree(dir), before);
  EXPECT_FALSE(fs::exists(dir + "/../escaped.json"));
}

TEST(Hostile, OutputsNeverReplaceSpecialFiles) {
  const std::string dir = scratch("special-out");
  const std::string fifo = dir + "/fifo", sub = dir + "/a-dir", target = dir + "/target",
                    link = dir + "/link";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::create_directories(sub);
  std::ofstream(target) << "precious";
  fs::create_symlink(target, link);
  const std::string tiny = test::tiny_model_path();
  for (const std::string& out : {fifo, sub, link}) {
    SCOPED_TRACE(out);
    expect_input_error(run_kvbench("tiny-model -o " + out),
                       out + ": exists and is not a regular file");
    expect_input_error(
        run_kvbench("dataset generate -m " + tiny + " --task passkey --lengths 64 -o " + out),
        out + ": exists and is not a regular file");
  }
  std::ofstream(dir + "/doc.txt") << "A short document about nothing in particular.";
  expect_input_error(
      run_kvbench("cache save -m " + tiny + " --context " + dir + "/doc.txt -o " + fifo),
      fifo + ": exists and is not a regular file");
  expect_input_error(run_kvbench("dataset calibrate -m " + tiny +
                                 " --tasks passkey --lengths 64 --records " + fifo),
                     fifo + ": exists and is not a regular file");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "precious");
  EXPECT_TRUE(fs::is_directory(sub) && fs::is_empty(sub));
  // Nothing else appeared (no temporaries left either).
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"a-dir", "doc.txt", "fifo", "link", "target"}));
}

TEST(Hostile, LinksInARunFolderSendNothingOutsideIt) {
  const std::string dir = scratch("links");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  const std::string outside = dir + "/outside";
  fs::create_directories(outside);
  // plots/ as a link to elsewhere: report refuses before writing anything.
  fs::remove_all(run + "/plots");
  fs::create_directory_symlink(outside, run + "/plots");
  const auto before = tree(run);
  expect_input_error(run_kvbench("report " + run), run + "/plots: not a directory");
  expect_input_error(run_kvbench("run -q --resume " + run), run + "/plots: not a directory");
  EXPECT_TRUE(fs::is_empty(outside));
  fs::remove(run + "/plots");
  // One plot file as a link to a file outside: refused, the file untouched.
  fs::create_directories(run + "/plots");
  std::ofstream(outside + "/precious") << "precious";
  fs::remove(run + "/plots/speed.png");
  fs::create_symlink(outside + "/precious", run + "/plots/speed.png");
  const auto with_link = tree(run);
  expect_input_error(run_kvbench("report " + run),
                     run + "/plots/speed.png: exists and is not a regular file");
  EXPECT_EQ(slurp(outside + "/precious"), "precious");
  EXPECT_EQ(tree(run), with_link);
  // cells/ as a link: a resume would write cells there.
  fs::rename(run + "/cells", dir + "/cells-moved");
  fs::create_directory_symlink(outside, run + "/cells");
  expect_input_error(run_kvbench("run -q --resume " + run), run + "/cells: not a directory");
  EXPECT_EQ(tree(outside).size(), 1u);
}

// --- class 3: errors, never aborts --------------------------------------------

TEST(Hostile, OutOfRangeNumbersAndDeepNestingAreInputErrors) {
  const std::string dir = scratch("numbers");
  const std::string exp = tiny_experiment(dir);
  const std::string out = dir + "/out";
  expect_input_error(run_kvbench("run " + exp + " -q --out " + out + " --set decoding.chunk=1e999"),
                     "--set 'decoding.chunk': number overflow parsing '1e999'");
  expect_input_error(run_kvbench("run " + exp + " -q --out " + out +
                                 " --set 'policies=" + std::string(200, '[') + "'"),
                     "--set 'policies': nested deeper than 64 levels");
  // A bare --set word that is not UTF-8 (found by fuzz_experiment: it aborted
  // when an error message showed it).
  expect_input_error(
      run_kvbench("run " + exp + " -q --out " + out + " --set \"$(printf 'policies=\\243')\""),
      "--set: not valid UTF-8");
  const std::string big = tiny_experiment(dir, R"(, "seed": 1e999)");
  expect_input_error(run_kvbench("run " + big + " -q --out " + out),
                     big + ": number overflow parsing '1e999'");
  std::ofstream(dir + "/deep.json") << std::string(100000, '[') << std::string(100000, ']');
  expect_input_error(run_kvbench("run " + dir + "/deep.json -q --out " + out),
                     dir + "/deep.json: nested deeper than 64 levels");
  std::ofstream(dir + "/bad.jsonl") << "{\"id\": \"x\", \"seed\": 1e999}\n";
  expect_input_error(run_kvbench("dataset show " + dir + "/bad.jsonl"),
                     dir + "/bad.jsonl:1: malformed JSON: number overflow");
  EXPECT_FALSE(fs::exists(out));
  // A --resume path far beyond PATH_MAX, and a path component beyond NAME_MAX.
  expect_input_error(run_kvbench("run -q --resume " + std::string(5000, 'a')), "path too long");
  const std::string long_name = dir + "/" + std::string(300, 'a');
  for (const std::string& args :
       {"report " + long_name, "run -q --resume " + long_name,
        "compare " + long_name + " " + long_name, "merge " + long_name + " -o " + dir + "/m",
        "dataset show " + long_name})
    expect_input_error(run_kvbench(args), long_name + ": ");
  EXPECT_FALSE(fs::exists(dir + "/m"));
}

TEST(Hostile, DamagedCellsAreErrorsNamingTheFileAndMergeWritesNothing) {
  const std::string dir = scratch("damaged");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  const std::string file = cell_files(run)[0];
  const std::string original = slurp(file);
  const json good = json::parse(original);
  struct Damage {
    std::string field;
    std::function<void(json&)> apply;
  };
  const std::vector<Damage> damages = {
      {"/score: expected a number", [](json& c) { c["score"] = "high"; }},
      {"/score: missing", [](json& c) { c.erase("score"); }},
      {"/score: out of [0, 1]", [](json& c) { c["score"] = 1.5; }},
      {"/score: out of [0, 1]", [](json& c) { c["score"] = -0.25; }},
      {"/policy: expected an object", [](json& c) { c["policy"] = 3; }},
      {"/policy/label: missing", [](json& c) { c["policy"].erase("label"); }},
      {"/policy/index: expected an integer", [](json& c) { c["policy"]["index"] = "0"; }},
      {"/instance/task: expected a string", [](json& c) { c["instance"]["task"] = json::array(); }},
      {"/instance/depth: expected a number or null",
       [](json& c) { c["instance"]["depth"] = "deep"; }},
      {"/: expected an object",
       [](json& c) {
         c = json::array({1, 2});
       }},
      {"/id: expected a string", [](json& c) { c["id"] = 7; }},
      {"/needle_survival: expected an object or null",
       [](json& c) { c["needle_survival"] = "all"; }},
      {"/needle_survival/per_layer: expected shares in [0, 1]",
       [](json& c) {
         c["needle_survival"] = {{"per_layer", {0.5, 2.0}}};
       }},
      {"/needle_survival/attended/per_layer: more than 4096 layers",
       [](json& c) {
         c["needle_survival"] = {{"attended", {{"per_layer", json(std::vector<double>(5000))}}}};
       }},
  };
  for (const auto& d : damages) {
    SCOPED_TRACE(d.field);
    json c = good;
    d.apply(c);
    std::ofstream(file) << c.dump();
    expect_input_error(run_kvbench("report " + run), file + ": " + d.field);
    expect_input_error(run_kvbench("compare " + run + " " + run), file + ": " + d.field);
    expect_input_error(run_kvbench("merge " + run + " -o " + dir + "/merged"),
                       file + ": " + d.field);
    EXPECT_FALSE(fs::exists(dir + "/merged"));
  }
  std::ofstream(file) << "{\"score\": 1e999}";
  expect_input_error(run_kvbench("report " + run), file + ": number overflow");
  std::ofstream(file) << std::string(1000, '{');
  expect_input_error(run_kvbench("compare " + run + " " + run),
                     file + ": nested deeper than 64 levels");
  std::ofstream(run + "/meta.json") << "{\"plan\": \"many\"}";
  std::ofstream(file) << original;
  expect_input_error(run_kvbench("report " + run), run + "/meta.json: /plan: expected an object");
  std::ofstream(run + "/meta.json") << "{}";
  const std::string config = slurp(run + "/config.json");
  std::ofstream(run + "/config.json") << "[1]";
  expect_input_error(run_kvbench("report " + run), run + "/config.json: /: expected an object");
  expect_input_error(run_kvbench("merge " + run + " -o " + dir + "/merged"),
                     run + "/config.json: /: expected an object");
  json named = json::parse(config);
  named["name"] = 42;
  std::ofstream(run + "/config.json") << named.dump();
  expect_input_error(run_kvbench("report " + run), run + "/config.json: /name: expected a string");
  expect_input_error(run_kvbench("run -q --resume " + run),
                     run + "/config.json: /name: expected a string");
  EXPECT_FALSE(fs::exists(dir + "/merged"));
}

TEST(Hostile, FileNamesAreBoundedAndLongIdsStayDistinct) {
  const std::string a(300, 'a'), b = std::string(299, 'a') + "b";
  EXPECT_LE(file_name_safe(a).size(), kMaxFileNameStem);
  EXPECT_NE(file_name_safe(a), file_name_safe(b));
  EXPECT_EQ(file_name_safe("passkey-1024-0.5-s0"), "passkey-1024-0.5-s0");  // short ids as before
  EXPECT_EQ(file_name_safe("a/b"), "a_b");
  EXPECT_EQ(file_name_safe(".."), "_.");
}

// --- class 4: whole input validated before the first write -----------------------

// Two generated instances as JSONL, the second one changed by `edit`.
std::string two_instances(const std::string& dir, const std::function<void(json&)>& edit) {
  const std::string path = dir + "/two.jsonl";
  const auto r = run_kvbench("dataset generate -m " + test::tiny_model_path() +
                             " --task passkey --lengths 100 --samples 2 -o " + path);
  EXPECT_EQ(r.code, 0) << r.err;
  std::istringstream in(slurp(path));
  std::string line, text;
  for (int i = 0; std::getline(in, line); ++i) {
    json j = json::parse(line);
    if (i == 0) j["id"] = "a/b";
    if (i == 1) {
      j["id"] = "a_b";
      edit(j);
    }
    text += j.dump() + "\n";
  }
  std::ofstream(path) << text;
  return path;
}

TEST(Hostile, CollidingIdsAndBadGradersAreRefusedBeforeAnyCell) {
  const std::string dir = scratch("whole-input");
  const std::string out = dir + "/out";
  const std::string same_name = two_instances(dir, [](json&) {});
  const std::string exp = tiny_experiment(dir);
  expect_input_error(run_kvbench("run " + exp + " -q --out " + out +
                                 " --set 'tasks=[{\"jsonl\":\"" + same_name + "\"}]'"),
                     "instance ids 'a/b' and 'a_b' map to the same file name 'a_b'");
  EXPECT_FALSE(fs::exists(out));
  const std::string bad_grader = two_instances(dir, [](json& j) {
    j["id"] = "second";
    j["grader"] = "vibes";
  });
  expect_input_error(run_kvbench("run " + exp + " -q --out " + out +
                                 " --set 'tasks=[{\"jsonl\":\"" + bad_grader + "\"}]'"),
                     bad_grader + ":2: field 'grader': unknown grader 'vibes'");
  EXPECT_FALSE(fs::exists(out));
}

TEST(Hostile, AnInstanceIdOf300CharactersRuns) {
  const std::string dir = scratch("long-id");
  const std::string long_id(300, 'x');
  const std::string jsonl = two_instances(dir, [&](json& j) { j["id"] = long_id; });
  const auto r = run_kvbench("run " + tiny_experiment(dir) + " -q --out " + dir +
                             "/out --set 'tasks=[{\"jsonl\":\"" + jsonl + "\"}]'");
  ASSERT_EQ(r.code, 0) << r.err;
  std::string run;
  for (const auto& e : fs::directory_iterator(dir + "/out")) run = e.path().string();
  const auto cells = RunFolder::open(run).cells();
  ASSERT_EQ(cells.size(), 4u);  // 2 instances x (full, win)
  for (const auto& f : cell_files(run))
    EXPECT_LE(fs::path(f).filename().string().size(), 255u) << f;
  bool found = false;
  for (const auto& c : cells) found = found || c["instance"]["id"] == long_id;
  EXPECT_TRUE(found);
}

// --- class 5: no hang, no unbounded read ---------------------------------------

TEST(Hostile, SpecialFilesAsInputsAreRefusedWithoutBlocking) {
  const std::string dir = scratch("special-in");
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const std::string tiny = test::tiny_model_path();
  expect_input_error(run_kvbench("info --model " + fifo), fifo + ": not a regular file");
  expect_input_error(run_kvbench("ask -m " + tiny + " --cache " + fifo + " --question hi"),
                     fifo + ": not a regular file");
  expect_input_error(
      run_kvbench("cache save -m " + tiny + " --context " + fifo + " -o " + dir + "/x.kvc"),
      fifo + ": not a regular file");
  expect_input_error(run_kvbench("run " + fifo + " -q --out " + dir + "/out"),
                     fifo + ": not a regular file");
  const std::string exp = tiny_experiment(dir);
  for (const std::string& jsonl : {fifo, std::string("/dev/zero")})
    expect_input_error(run_kvbench("run " + exp + " -q --out " + dir +
                                   "/out --set 'tasks=[{\"jsonl\":\"" + jsonl + "\"}]'"),
                       jsonl + ": not a regular file");
  expect_input_error(run_kvbench("dataset show /dev/zero"), "/dev/zero: not a regular file");
  EXPECT_FALSE(fs::exists(dir + "/out"));
  EXPECT_FALSE(fs::exists(dir + "/x.kvc"));
}

// Forged snapshots: a header claiming a payload of 8.6 GB behind a few
// compressed bytes, and a deeply nested header.
TEST(Hostile, ForgedSnapshotHeadersAllocateNothingBigAndNestNoDeeperThan64) {
  const std::string dir = scratch("forged-kvc");
  const std::string tiny = test::tiny_model_path();
  std::ofstream(dir + "/doc.txt") << "A short document about nothing in particular.";
  const std::string kvc = dir + "/doc.kvc", deep = dir + "/deep.kvc";
  ASSERT_EQ(run_kvbench("cache save -m " + tiny + " --context " + dir + "/doc.txt -o " + kvc).code,
            0);
  fs::copy_file(kvc, deep);
  forge_header(kvc, [](nlohmann::ordered_json& header) {
    header["payload"]["raw_bytes"] = uint64_t{8600000000};
    return header.dump();
  });
  expect_input_error(run_kvbench("ask -m " + tiny + " --cache " + kvc + " --question hi"),
                     kvc + ": payload.raw_bytes: the header says 8600000000 bytes");
  forge_header(deep, [](nlohmann::ordered_json& header) {
    const std::string text = header.dump();
    return text.substr(0, text.size() - 1) + ",\"x\":" + std::string(100000, '[') +
           std::string(100000, ']') + "}";
  });
  expect_input_error(run_kvbench("cache info " + deep),
                     deep + ": header: nested deeper than 64 levels");
  expect_input_error(run_kvbench("ask -m " + tiny + " --cache " + deep + " --question hi"),
                     deep + ": header: nested deeper than 64 levels");
}

TEST(Hostile, ControlCharactersInTheExperimentNameAreRefused) {
  const std::string dir = scratch("nul-name");
  for (const std::string name : {"a\\u0000b", "\\u0000", "a\\nb", ".."}) {
    SCOPED_TRACE(name);
    const std::string exp = tiny_experiment(dir, R"(, "name": ")" + name + "\"");
    expect_input_error(run_kvbench("run " + exp + " -q --out " + dir + "/out"), exp + ": /name:");
  }
  const std::string exp = tiny_experiment(dir, R"(, "output": "a\u0000b")");
  expect_input_error(run_kvbench("run " + exp + " -q"),
                     exp + ": /output: must not contain control characters");
  EXPECT_FALSE(fs::exists(dir + "/out"));
}

// --- class 6: resume ----------------------------------------------------------------

TEST(Hostile, ARunFolderHasOneWriterAndResumeRemovesStaleTemporaries) {
  const std::string dir = scratch("lock");
  const std::string run = tiny_run(dir);
  ASSERT_FALSE(run.empty());
  {
    // Another writer holds the folder (as a running kvbench would).
    const int fd = ::open(run.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
    const auto before = tree(run);
    expect_input_error(run_kvbench("run -q --resume " + run),
                       run + ": another kvbench process is writing this run folder");
    expect_input_error(run_kvbench("report " + run),
                       run + ": another kvbench process is writing this run folder");
    EXPECT_EQ(tree(run), before);
    ::close(fd);
  }
  {
    // A real second kvbench: the first one stopped while it holds the folder.
    const pid_t pid = spawn_kvbench({"report", run});
    ::kill(pid, SIGSTOP);
    // Until the first one holds the lock (it may have been stopped before taking it).
    for (int i = 0; i < 200; ++i) {
      ::kill(pid, SIGCONT);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      ::kill(pid, SIGSTOP);
      const int fd = ::open(run.c_str(), O_RDONLY | O_DIRECTORY);
      const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
      ::close(fd);
      if (held) break;
    }
    expect_input_error(run_kvbench("run -q --resume " + run),
                       run + ": another kvbench process is writing this run folder");
    ::kill(pid, SIGCONT);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  // Temporaries of writers killed half way.
  std::ofstream(run + "/cells/" + fs::path(cell_files(run)[0]).stem().string() + ".json.tmp.4242")
      << "{\"half";
  std::ofstream(run + "/meta.json.tmp.77") << "{";
  const auto r = run_kvbench("run -q --resume " + run);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(run + "/meta.json.tmp.77"));
  for (const auto& f : cell_files(run)) EXPECT_EQ(f.find(".tmp."), std::string::npos) << f;
  // A folder whose config.json was never published.
  fs::rename(run + "/config.json", run + "/config.json.tmp.99");
  expect_input_error(run_kvbench("run -q --resume " + run),
                     run + ": not a run folder (no config.json");
}

// kill -9 at 20 random moments (cell writes, config and meta writes,
// report writes included, as they fall), resuming after each: no temporary
// survives, and the cells equal an uninterrupted run's.
TEST(Hostile, KilledAtTwentyRandomMomentsLeavesNoTemporaries) {
  const std::string dir = scratch("kill20");
  const std::string exp = tiny_experiment(dir);
  const std::string grid =
      "tasks=[{\"task\":\"passkey\",\"lengths\":[128],\"depths\":[0.1,0.4,0.7,0.9]}]";
  const auto timed = std::chrono::steady_clock::now();
  ASSERT_EQ(run_kvbench("run " + exp + " -q --out " + dir + "/whole --set '" + grid + "'").code, 0);
  const auto duration = std::chrono::steady_clock::now() - timed;
  std::string whole_dir;
  for (const auto& e : fs::directory_iterator(dir + "/whole")) whole_dir = e.path().string();
  const auto stable = [](const std::string& run) {
    std::map<std::string, json> out;
    for (auto c : RunFolder::open(run).cells()) {
      c.erase("timing");
      out[c["id"].get<std::string>()] = c;
    }
    return out;
  };
  const auto whole = stable(whole_dir);
  std::mt19937 rng(17);
  std::string folder;
  for (int round = 0; round < 20; ++round) {
    const pid_t pid =
        folder.empty() ? spawn_kvbench({"run", exp, "-q", "--out", dir + "/killed", "--set", grid})
                       : spawn_kvbench({"run", "-q", "--resume", folder});
    std::this_thread::sleep_for(duration * (rng() % 1000) / 1000);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    if (folder.empty() && fs::exists(dir + "/killed"))
      for (const auto& e : fs::directory_iterator(dir + "/killed")) folder = e.path().string();
    // Killed between creating the folder and publishing config.json: the
    // folder says so, and the run starts again.
    if (!folder.empty() && !fs::exists(folder + "/config.json")) {
      expect_input_error(run_kvbench("run -q --resume " + folder), "no config.json");
      fs::remove_all(folder);
      folder.clear();
    }
  }
  ASSERT_FALSE(folder.empty()) << "every kill came before the run folder was created";
  const auto r = run_kvbench("run -q --resume " + folder);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(stable(folder), whole);
  for (const auto& e : fs::recursive_directory_iterator(folder))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

}  // namespace
}  // namespace kvbench::test
