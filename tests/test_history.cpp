// The recall history (harness/history/) on tiny synthetic run folders: add
// and read back, idempotent re-adds, concurrent writers in two processes,
// schema migration from version 0 and 1, runs of several models, foreign, newer and corrupt
// database files, regression points, and hostile labels on their way to the
// markdown table and the gnuplot script; show --csv and --json, series split
// by decoding protocol, and history add's --repo.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/encode/csv.h"
#include "harness/history/add.h"
#include "harness/history/plot.h"
#include "harness/history/schema.h"
#include "harness/history/show.h"
#include "harness/history/show_data.h"
#include "harness/history/trend.h"
#include "harness/history/writer.h"
#include "harness/report/plot_script.h"
#include "harness/run/run_folder.h"
#include "harness/subprocess.h"
#include "model/common/error.h"
#include "tests/support/cli_run.h"
#include "tests/support/scratch.h"

namespace kvbench::history {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::string scratch(const std::string& name) { return test::scratch_folder("history", name); }

struct CellSpec {
  std::string label, task, instance;
  double score;
  std::string spec = "";  // "" : label + ":spec"
};

// A run folder at `commit` started at `started` holding the given cells.
// dirty: built with uncommitted changes (meta.json git_dirty).
std::string make_run(const std::string& out, const std::string& commit, const std::string& started,
                     const std::vector<CellSpec>& cells, const std::string& experiment = "tiny",
                     bool dirty = false, const json& decoding = json()) {
  json meta = {{"git_commit", commit},
               {"started_utc", started},
               {"model_sha256", "ab12"},
               {"cpu", "Test CPU"},
               {"cores", 2},
               {"plan", {{"cells", cells.size()}}}};
  if (dirty) meta["git_dirty"] = true;
  // The folder's name is fixed: the experiment's may be anything.
  json config = {{"name", experiment}, {"model", out + "/m.gguf"}};
  if (!decoding.is_null()) config["decoding"] = decoding;
  RunFolder f = RunFolder::create(out, "run", config, meta);
  int k = 0;
  for (const CellSpec& c : cells) {
    const std::string id = "c" + std::to_string(k++);
    f.write_cell(id,
                 json{{"id", id},
                      {"instance", {{"id", c.instance}, {"task", c.task}}},
                      {"policy",
                       {{"label", c.label}, {"spec", c.spec.empty() ? c.label + ":spec" : c.spec}}},
                      {"score", c.score}});
  }
  return f.dir();
}

// n instances of (label, task) scoring 1, the first `failing` of them 0.
std::vector<CellSpec> group(const std::string& label, const std::string& task, int n, int failing) {
  std::vector<CellSpec> v;
  for (int i = 0; i < n; ++i)
    v.push_back({label, task, task + "-" + std::to_string(i), i < failing ? 0.0 : 1.0});
  return v;
}

std::vector<CellSpec> join(std::vector<CellSpec> a, const std::vector<CellSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

int64_t count(const Db& db, const char* table) {
  Stmt s(db, std::string("SELECT count(*) FROM ") + table, table);  // table: a literal here
  EXPECT_TRUE(s.step());
  return s.integer(0);
}

const Series* find_series(const Trend& t, const std::string& label, const std::string& task) {
  for (const Series& s : t.series)
    if (s.configuration == label && s.task == task) return &s;
  return nullptr;
}

// A merge of shards run on several machines (meta.json "machines", no one
// "cpu"): the history's machine names every CPU, once each, in order.
TEST(History, AMergeOfSeveralMachinesNamesTheirCpus) {
  const std::string d = scratch("machines");
  const std::string run =
      make_run(d + "/runs", "aaaaaaa1", "2026-11-21T07:00:00Z",
               join(group("h2o", "passkey", 2, 0), group("full", "passkey", 2, 0)));
  json meta = json::parse(std::ifstream(run + "/meta.json"));
  meta.erase("cpu");
  meta["machines"] =
      json::parse(R"([{"cpu": "Intel Xeon", "git_commit": "aaaaaaa1", "shards": [[1, 2]]},
      {"cpu": "AMD EPYC", "git_commit": "aaaaaaa1", "shards": [[3, 3]]},
      {"cpu": "Intel Xeon", "git_commit": "aaaaaaa1", "git_dirty": true, "shards": [[4, 4]]}])");
  std::ofstream(run + "/meta.json") << meta.dump();
  HistoryWriter writer(d + "/h.sqlite");
  EXPECT_EQ(add_run(writer.db(), run, "").cells_added, 4);
  const Trend t = load_trend(writer.db(), 0.0);
  ASSERT_EQ(t.commits.size(), 1u);
  EXPECT_EQ(t.commits[0].machines, std::vector<std::string>{"Intel Xeon + AMD EPYC, 2 cores"});
}

TEST(History, AddShowRoundTripAndIdempotentReAdd) {
  const std::string d = scratch("roundtrip");
  // Three commits; started times out of commit order on purpose: with no
  // git dates the start time orders them.
  const std::string a =
      make_run(d + "/runs", "aaaaaaa1", "2026-11-21T07:00:00Z",
               join(group("h2o", "passkey", 4, 0), group("full", "passkey", 4, 0)));
  const std::string b =
      make_run(d + "/runs", "bbbbbbb2", "2026-11-22T07:00:00Z",
               join(group("h2o", "passkey", 4, 1), group("full", "passkey", 4, 0)));
  const std::string c =
      make_run(d + "/runs", "ccccccc3", "2026-11-23T07:00:00Z",
               join(group("h2o", "passkey", 4, 4), group("full", "passkey", 4, 0)));
  HistoryWriter writer(d + "/h.sqlite");
  const Db& db = writer.db();
  EXPECT_EQ(schema_version(db), kSchemaVersion);
  const AddResult rc = add_run(db, c, "");
  EXPECT_EQ(rc.cells_added, 8);
  EXPECT_EQ(rc.git_commit, "ccccccc3");
  EXPECT_EQ(rc.run_id.size(), 64u);
  EXPECT_EQ(add_run(db, a, "").cells_added, 8);
  EXPECT_EQ(add_run(db, b, "").cells_added, 8);
  // The same folder again, and a copy of it elsewhere: nothing new.
  const AddResult again = add_run(db, b, "");
  EXPECT_EQ(again.cells_added, 0);
  EXPECT_EQ(again.cells_present, 8);
  fs::copy(b, d + "/copy", fs::copy_options::recursive);
  EXPECT_EQ(add_run(db, d + "/copy", "").cells_added, 0);
  EXPECT_EQ(count(db, "runs"), 3);
  EXPECT_EQ(count(db, "cells"), 24);

  const Trend t = load_trend(db, 0.0);
  ASSERT_EQ(t.commits.size(), 3u);
  EXPECT_EQ(t.commits[0].commit, "aaaaaaa1");
  EXPECT_EQ(t.commits[2].commit, "ccccccc3");
  EXPECT_EQ(t.commits[1].machines, std::vector<std::string>{"Test CPU, 2 cores"});
  EXPECT_EQ(t.runs, 3);
  EXPECT_EQ(t.cells, 24);
  const Series* h2o = find_series(t, "h2o", "passkey");
  ASSERT_NE(h2o, nullptr);
  ASSERT_EQ(h2o->points.size(), 3u);
  EXPECT_DOUBLE_EQ(h2o->points[1].score.mean, 0.75);
  EXPECT_EQ(h2o->points[1].score.n, 4);
  EXPECT_NEAR(h2o->points[1].score.ci.lo, 0.300642, 1e-6);  // Wilson, 3 of 4
  // 1 of 4 flips (p = 0.25): no regression; then the other 3 of 4 (p = 0.0625,
  // three discordant pairs): still none. Pairs are per instance, as in compare.
  EXPECT_FALSE(h2o->points[1].regressed);
  EXPECT_DOUBLE_EQ(h2o->points[1].p_drop, 0.25);
  EXPECT_FALSE(h2o->points[2].regressed);
  EXPECT_DOUBLE_EQ(h2o->points[2].p_drop, 0.0625);
  EXPECT_EQ(h2o->points[2].paired, 4);

  const std::string md = show_markdown(t, d + "/h.sqlite");
  EXPECT_NE(md.find("3 runs, 24 cells, 3 commits."), std::string::npos) << md;
  EXPECT_NE(md.find("| Configuration | Task | aaaaaaa | bbbbbbb | ccccccc |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| h2o | passkey | 1.000 [0.510, 1.000] n=4 | 0.750 [0.301, 0.954] n=4 | "
                    "0.000 [0.000, 0.490] n=4 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| aaaaaaa | 2026-11-21 (run) | 1 | Test CPU, 2 cores | ab12 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("No regression point"), std::string::npos) << md;
  fs::remove_all(d);
}

// The trend as small multiples: one panel per series (configuration x
// task), never several series dodged around a commit; commit labels and an
// axis title under each column's lowest panel; the score axis past 0 and 1.
TEST(History, PlotHasAPanelPerConfigurationAndTask) {
  const std::string d = scratch("panels");
  HistoryWriter writer(d + "/h.sqlite");
  const Db& db = writer.db();
  for (const auto& [commit, when] : {std::pair{"aaaaaaa1", "2026-11-21T07:00:00Z"},
                                     std::pair{"bbbbbbb2", "2026-11-22T07:00:00Z"}})
    add_run(db,
            make_run(d + "/runs", commit, when,
                     join(join(group("h2o", "passkey", 4, 0), group("full", "passkey", 4, 0)),
                          group("h2o", "niah", 4, 1))),
            "");
  const Trend t = load_trend(db, 0.0);
  ASSERT_EQ(t.series.size(), 3u);
  const std::string script = plot_script(t, d + "/trend.png");
  // Three panels, one series each (no second series in a plot command), no
  // dodging: every x a whole commit.
  EXPECT_EQ(script.find(", $s"), std::string::npos);
  size_t panels = 0;
  for (size_t at = script.find("\nplot $s using"); at != std::string::npos;
       at = script.find("\nplot $s using", at + 1))
    ++panels;
  EXPECT_EQ(panels, 3u);
  EXPECT_NE(script.find("$s << EOD\n1 1 0.51"), std::string::npos) << script;
  EXPECT_NE(script.find("$s << EOD\n1 0.75 "), std::string::npos) << script;
  // Columns: niah, then passkey (series order); rows: full, h2o. The
  // niah column has its lowest panel in row h2o, as passkey has: two
  // labelled x axes.
  EXPECT_NE(script.find("set label 1 'niah (tiny)'"), std::string::npos) << script;
  EXPECT_NE(script.find("set label 2 'passkey (tiny)'"), std::string::npos);
  size_t titled = 0;
  for (size_t at = script.find("set xlabel 'commit (history order: short id, date)'");
       at != std::string::npos;
       at = script.find("set xlabel 'commit (history order: short id, date)'", at + 1))
    ++titled;
  EXPECT_EQ(titled, 2u);
  EXPECT_NE(script.find("set xtics 1, 1, 2 format ''"), std::string::npos);  // full's panel
  EXPECT_NE(script.find("set yrange [-0.12:1.12]"), std::string::npos);
  write_trend_plot(t, d + "/trend.png");
  EXPECT_GT(fs::file_size(d + "/trend.png"), 1000u);
  fs::remove_all(d);
}

TEST(History, RegressionPointIsTheFirstSignificantDrop) {
  const std::string d = scratch("regression");
  HistoryWriter writer(d + "/h.sqlite");
  const Db& db = writer.db();
  // All 4 instances fail at the second commit: mid-p McNemar p = 1/32.
  add_run(db, make_run(d, "1111111", "2026-11-21T07:00:00Z", group("snapkv", "niah", 4, 0)), "");
  add_run(db, make_run(d, "2222222", "2026-11-22T07:00:00Z", group("snapkv", "niah", 4, 4)), "");
  add_run(db, make_run(d, "3333333", "2026-11-23T07:00:00Z", group("snapkv", "niah", 4, 4)), "");
  const Trend t = load_trend(db, 0.05);
  const Series* s = find_series(t, "snapkv", "niah");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->points.size(), 3u);
  EXPECT_FALSE(s->points[0].regressed);
  EXPECT_TRUE(s->points[1].regressed);
  EXPECT_DOUBLE_EQ(s->points[1].p_drop, 0.03125);
  EXPECT_DOUBLE_EQ(s->points[1].drop, 1.0);
  EXPECT_FALSE(s->points[2].regressed);  // no further drop
  const std::string md = show_markdown(t, "h.sqlite");
  EXPECT_NE(md.find("0.000 [0.000, 0.490] n=4 ▼ p=0.0312 |"), std::string::npos) << md;
  EXPECT_NE(md.find("- tiny / snapkv / niah at 2222222 (vs 1111111): mean score 1.000 -> 0.000, "
                    "a drop of 1.000 over 4 paired instances, one-sided p = 0.03125"),
            std::string::npos)
      << md;
  // Beyond a tolerance of the whole drop it is accepted.
  EXPECT_FALSE(find_series(load_trend(db, 1.0), "snapkv", "niah")->points[1].regressed);
  // The plot marks it.
  const std::string script = plot_script(t, d + "/trend.png");
  EXPECT_NE(script.find("title 'regression point'"), std::string::npos) << script;
  fs::remove_all(d);
}

// n instances of group() with the spec given.
std::vector<CellSpec> with_spec(std::vector<CellSpec> v, const std::string& spec) {
  for (CellSpec& c : v) c.spec = spec;
  return v;
}

// Series are keyed by spec: the issue's case (the label 'snapkv 256' kept
// while its budget went to 768) is two series and one line, not a drop; a
// label renamed over the same spec continues its series, and a drop across
// the rename is still found.
TEST(History, SeriesAreKeyedBySpecNotLabel) {
  const std::string d = scratch("by-spec");
  HistoryWriter writer(d + "/h.sqlite");
  const Db& db = writer.db();
  add_run(db,
          make_run(d, "1111111", "2026-11-21T07:00:00Z",
                   with_spec(group("snapkv 256", "niah", 4, 0), "snapkv:budget=256")),
          "");
  add_run(db,
          make_run(d, "2222222", "2026-11-22T07:00:00Z",
                   with_spec(group("snapkv 256", "niah", 4, 4), "snapkv:budget=768")),
          "");
  const Trend t = load_trend(db, 0.05);
  ASSERT_EQ(t.series.size(), 2u);
  for (const Series& s : t.series) {
    EXPECT_EQ(s.points.size(), 1u) << s.configuration;
    EXPECT_FALSE(s.points[0].regressed);
  }
  ASSERT_NE(find_series(t, "snapkv 256 [snapkv:budget=256]", "niah"), nullptr);
  ASSERT_NE(find_series(t, "snapkv 256 [snapkv:budget=768]", "niah"), nullptr);
  std::string md = show_markdown(t, "h.sqlite");
  EXPECT_NE(md.find("- 'snapkv 256' named 2 specs (`snapkv:budget=256`, `snapkv:budget=768`): "
                    "different configurations, a series each\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("No regression point"), std::string::npos) << md;

  // Renamed over the same spec, all four now failing: one series, the drop found.
  add_run(db,
          make_run(d, "3333333", "2026-11-23T07:00:00Z",
                   with_spec(group("SnapKV 25%", "niah", 4, 4), "snapkv:budget=256")),
          "");
  const Trend r = load_trend(db, 0.05);
  // Shown by its latest label, which no other series shares now: no suffix.
  const Series* s = find_series(r, "SnapKV 25%", "niah");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->points.size(), 2u);
  EXPECT_TRUE(s->points[1].regressed);
  EXPECT_EQ(s->labels, (std::vector<std::string>{"SnapKV 25%", "snapkv 256"}));
  md = show_markdown(r, "h.sqlite");
  EXPECT_NE(md.find("- `snapkv:budget=256` was labelled 'SnapKV 25%', 'snapkv 256' (latest "
                    "first): one configuration, one series\n"),
            std::string::npos)
      << md;
  fs::remove_all(d);
}

// Issue 36: the same configurations run under the two decoding protocols
// (query-aware, the seed's; query-agnostic, kvpress's) differ in every
// number by the protocol. The config hash covers decoding.protocol, but a
// series is not keyed by the hash (any edit of the experiment would split
// it): the run's protocol is stored (schema 5) and keys the series. At one
// commit the query-agnostic run, started later, neither replaces the
// query-aware cells nor becomes the point the next query-aware run is
// paired with; show says so in one line, the plot names it.
TEST(History, RunsOfTheOtherProtocolAreTheirOwnSeries) {
  const std::string d = scratch("protocol");
  HistoryWriter writer(d + "/h.sqlite");
  const Db& db = writer.db();
  add_run(db, make_run(d, "1111111", "2026-11-21T07:00:00Z", group("snapkv", "niah", 8, 0)), "");
  add_run(db,
          make_run(d, "1111111", "2026-11-21T08:00:00Z", group("snapkv", "niah", 8, 8), "tiny",
                   false, json{{"protocol", "query_agnostic"}}),
          "");
  add_run(db, make_run(d, "2222222", "2026-11-22T07:00:00Z", group("snapkv", "niah", 8, 0)), "");
  // Stored per run; the config hash differs too (it covers the protocol).
  std::set<std::pair<std::string, std::string>> stored;  // (config hash, protocol)
  Stmt runs(db, "SELECT config_hash, protocol FROM runs", "runs");
  while (runs.step()) stored.insert({runs.text(0), runs.text(1)});
  ASSERT_EQ(stored.size(), 2u);  // the two query-aware runs share their hash
  EXPECT_NE(stored.begin()->first, std::next(stored.begin())->first);
  std::set<std::string> protocols;
  for (const auto& [hash, protocol] : stored) protocols.insert(protocol);
  EXPECT_EQ(protocols, (std::set<std::string>{"query_aware", "query_agnostic"}));

  const Trend t = load_trend(db, 0.05);
  ASSERT_EQ(t.series.size(), 2u);
  const Series* aware = find_series(t, "snapkv", "niah");
  const Series* agnostic = find_series(t, "snapkv (query-agnostic)", "niah");
  ASSERT_NE(aware, nullptr);
  ASSERT_NE(agnostic, nullptr);
  EXPECT_EQ(aware->protocol, kQueryAware);
  EXPECT_EQ(agnostic->protocol, kQueryAgnostic);
  EXPECT_EQ(aware->spec, agnostic->spec);  // the same configuration otherwise
  ASSERT_EQ(aware->points.size(), 2u);
  EXPECT_DOUBLE_EQ(aware->points[0].score.mean, 1.0);  // not replaced by the later run's zeros
  EXPECT_FALSE(aware->points[1].regressed);
  ASSERT_EQ(agnostic->points.size(), 1u);
  EXPECT_DOUBLE_EQ(agnostic->points[0].score.mean, 0.0);
  const std::string md = show_markdown(t, "h.sqlite");
  EXPECT_NE(md.find("- 'snapkv' ran under both protocols (decoding.protocol query_aware and "
                    "query_agnostic): different configurations, a series each ('snapkv "
                    "(query-agnostic)')\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| snapkv (query-agnostic) | niah |"), std::string::npos) << md;
  EXPECT_NE(md.find("No regression point"), std::string::npos) << md;
  EXPECT_NE(plot_script(t, d + "/trend.png").find(plot::label("snapkv (query-agnostic)")),
            std::string::npos);

  // A run stored before version 5 (protocol NULL) reads as query-aware;
  // adding its folder again records its protocol.
  const std::string old_agnostic =
      make_run(d + "/old", "3333333", "2026-11-23T07:00:00Z", group("snapkv", "niah", 8, 0), "tiny",
               false, json{{"protocol", "query_agnostic"}});
  const AddResult first = add_run(db, old_agnostic, "");
  db.exec("UPDATE runs SET protocol = NULL WHERE run_id = '" + first.run_id + "'");  // hex id
  EXPECT_EQ(find_series(load_trend(db, 0.05), "snapkv", "niah")->points.size(), 3u);
  const AddResult again = add_run(db, old_agnostic, "");
  EXPECT_EQ(again.cells_added, 0);
  EXPECT_EQ(find_series(load_trend(db, 0.05), "snapkv (query-agnostic)", "niah")->points.size(),
            2u);
  // A protocol kvbench does not know is refused, naming the field.
  const std::string odd =
      make_run(d + "/odd", "4444444", "2026-11-24T07:00:00Z", group("snapkv", "niah", 1, 0), "tiny",
               false, json{{"protocol", "\x1b[2Jsideways"}});
  try {
    add_run(db, odd, "");
    ADD_FAILURE() << "unknown protocol accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("config.json: /decoding/protocol: expected"),
              std::string::npos)
        << e.what();
  }
  fs::remove_all(d);
}

// A run of another arithmetic (bf16 attention, exact activations) is a
// series of its own: at the same commit it neither replaces the default
// run's cells nor becomes the point the next default run is compared with.
TEST(History, RunsOfAnotherArithmeticAreTheirOwnSeries) {
  const std::string d = scratch("arithmetic");
  HistoryWriter writer(d + "/h.sqlite");
  const Db& db = writer.db();
  add_run(db, make_run(d, "1111111", "2026-11-21T07:00:00Z", group("snapkv", "niah", 4, 0)), "");
  add_run(db,
          make_run(d, "1111111", "2026-11-21T08:00:00Z", group("snapkv", "niah", 4, 4), "tiny",
                   false, json{{"attention", "bf16"}}),
          "");
  add_run(db,
          make_run(d, "1111111", "2026-11-21T09:00:00Z", group("snapkv", "niah", 4, 4), "tiny",
                   false, json{{"exact", true}}),
          "");
  add_run(db, make_run(d, "2222222", "2026-11-22T07:00:00Z", group("snapkv", "niah", 4, 0)), "");
  const Trend t = load_trend(db, 0.05);
  std::map<std::string, size_t> points;
  for (const Series& s : t.series) points[s.experiment] = s.points.size();
  EXPECT_EQ(points,
            (std::map<std::string, size_t>{{"tiny", 2},
                                           {"tiny [fast (8-bit activations), bf16 attention]", 1},
                                           {"tiny [exact (f32 activations), f32 attention]", 1}}));
  // The default series kept its own cells at the first commit: no drop.
  for (const Series& s : t.series)
    if (s.experiment == "tiny") {
      EXPECT_DOUBLE_EQ(s.points[0].score.mean, 1.0);
      EXPECT_FALSE(s.points[1].regressed);
    }
  fs::remove_all(d);
}

// Two processes add different runs to one new database at the same moment:
// every row lands (BEGIN IMMEDIATE and the busy timeout), the schema is
// created once.
TEST(History, ConcurrentWritersLoseNothing) {
  const std::string d = scratch("concurrent");
  std::string first, second;
  for (int i = 0; i < 12; ++i) {
    const std::string run = make_run(
        d + "/runs", "c" + std::to_string(1000000 + i),
        "2026-11-2" + std::to_string(1 + i % 8) + "T0" + std::to_string(i % 10) + ":00:00Z",
        join(group("h2o", "passkey", 20, i % 3), group("full", "passkey", 20, 0)));
    (i % 2 ? second : first) += " '" + run + "'";
  }
  const std::string db = d + "/h.sqlite";
  const std::string bin = KVBENCH_BINARY;
  const std::string cmd = "(" + bin + " history add" + first + " --db '" + db + "' --repo '' > " +
                          d + "/a.out 2>&1; echo $? > " + d + "/a.rc) & (" + bin + " history add" +
                          second + " --db '" + db + "' --repo '' > " + d +
                          "/b.out 2>&1; echo $? > " + d + "/b.rc) & wait";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  for (const char* who : {"a", "b"}) {
    std::ifstream rc(d + "/" + who + ".rc");
    int code = -1;
    rc >> code;
    std::ifstream out(d + "/" + who + ".out");
    const std::string text{std::istreambuf_iterator<char>(out), {}};
    EXPECT_EQ(code, 0) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 6) << text;
    EXPECT_NE(text.find("40 cells added, 0 already in the history"), std::string::npos) << text;
  }
  const auto h = open_history_read(db);
  EXPECT_EQ(count(*h, "runs"), 12);
  EXPECT_EQ(count(*h, "cells"), 12 * 40);
  EXPECT_EQ(schema_version(*h), kSchemaVersion);
  fs::remove_all(d);
}

TEST(History, MigratesVersion0And1) {
  const std::string d = scratch("migrate");
  // Version 0: an SQLite file without tables (not an empty file: history.h
  // refuses those) becomes the current layout when added to, and reads as
  // an empty history.
  {
    Db v0(d + "/v0.sqlite", Db::Mode::Create);
    v0.exec("CREATE TABLE t(x)");  // pages written, then no table left
    v0.exec("DROP TABLE t");
  }
  EXPECT_EQ(load_trend(*open_history_read(d + "/v0.sqlite"), 0.0).runs, 0);
  {
    HistoryWriter writer(d + "/v0.sqlite");
    EXPECT_EQ(schema_version(writer.db()), kSchemaVersion);
    writer.commit();
  }
  EXPECT_EQ(schema_version(*open_history_read(d + "/v0.sqlite")), kSchemaVersion);
  // Version 1 with a run and a cell in it: the rows survive; the spec column
  // version 1 did not keep reads NULL.
  const std::string v1_path = d + "/v1.sqlite";
  {
    Db v1(v1_path, Db::Mode::Create);
    create_version_1(v1);
    Stmt run(v1,
             "INSERT INTO runs VALUES ('r1', 'tiny', 'abcdef0', NULL, '2026-11-21T07:00:00Z', "
             "'ab12', 'cfg', 'Test CPU, 2 cores', '/tmp/x', '2026-11-21T08:00:00Z')",
             "runs");
    run.step();
    Stmt cell(v1, "INSERT INTO cells VALUES ('r1', 'c0', 'h2o', 'passkey', 'passkey-0', 1.0)",
              "cells");
    cell.step();
    EXPECT_EQ(schema_version(v1), 1);
  }
  // A reader reads version 1 as it is (the later columns as NULL) and never
  // migrates: the file stays byte for byte.
  std::ifstream in(v1_path, std::ios::binary);
  const std::string v1_bytes{std::istreambuf_iterator<char>(in), {}};
  {
    const auto reader = open_history_read(v1_path);
    EXPECT_EQ(schema_version(*reader), 1);
    const Trend t = load_trend(*reader, 0.0);
    ASSERT_EQ(t.series.size(), 1u);
    EXPECT_DOUBLE_EQ(t.series[0].points[0].score.mean, 1.0);
    EXPECT_EQ(t.series[0].model, "ab12");  // no model_label: the sha256's digits
    EXPECT_FALSE(t.commits[0].dirty);      // no git_dirty: a clean build
  }
  std::ifstream again(v1_path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(again), {}), v1_bytes);
  // A writer migrates its copy.
  HistoryWriter writer(v1_path);
  const Db& db = writer.db();
  EXPECT_EQ(schema_version(db), kSchemaVersion);
  EXPECT_EQ(count(db, "cells"), 1);
  Stmt label(db, "SELECT model_label FROM runs WHERE run_id = 'r1'", "runs");
  ASSERT_TRUE(label.step());
  EXPECT_TRUE(label.is_null(0));  // version 3's column: NULL for a run of one model
  Stmt dirty(db, "SELECT git_dirty FROM runs WHERE run_id = 'r1'", "runs");
  ASSERT_TRUE(dirty.step());
  EXPECT_TRUE(dirty.is_null(0));  // version 4's: unknown, read as a clean build
  Stmt protocol(db, "SELECT protocol FROM runs WHERE run_id = 'r1'", "runs");
  ASSERT_TRUE(protocol.step());
  EXPECT_TRUE(protocol.is_null(0));  // version 5's: unknown, read as query-aware
  Stmt spec(db, "SELECT spec FROM cells WHERE cell_id = 'c0'", "cells");
  ASSERT_TRUE(spec.step());
  EXPECT_TRUE(spec.is_null(0));
  const Trend t = load_trend(db, 0.0);
  ASSERT_EQ(t.series.size(), 1u);
  EXPECT_DOUBLE_EQ(t.series[0].points[0].score.mean, 1.0);
  // New cells after the migration keep their spec.
  add_run(db, make_run(d, "abcdef1", "2026-11-22T07:00:00Z", group("h2o", "passkey", 1, 0)), "");
  Stmt spec2(db, "SELECT spec FROM cells WHERE run_id <> 'r1'", "cells");
  ASSERT_TRUE(spec2.step());
  EXPECT_EQ(spec2.text(0), "h2o:spec");
  writer.commit();
  const auto migrated = open_history_read(v1_path);
  EXPECT_EQ(schema_version(*migrated), kSchemaVersion);
  EXPECT_EQ(count(*migrated, "cells"), 2);
  fs::remove_all(d);
}

// Why readers may open a history immutable: a writer never changes the
// file in place but renames a new one over it, so a reader that opened the
// file keeps reading what it opened, whole, while a writer adds; the next
// reader sees the new file.
TEST(History, AReaderKeepsItsFileWhileAWriterReplacesIt) {
  const std::string d = scratch("immutable");
  const std::string path = d + "/h.sqlite";
  {
    HistoryWriter writer(path);
    add_run(writer.db(),
            make_run(d + "/a", "aaaaaaa1", "2026-11-21T07:00:00Z", group("h2o", "niah", 4, 0)), "");
    writer.commit();
  }
  const auto reader = open_history_read(path);
  EXPECT_EQ(load_trend(*reader, 0.0).runs, 1);
  {
    HistoryWriter writer(path);
    add_run(writer.db(),
            make_run(d + "/b", "bbbbbbb2", "2026-11-22T07:00:00Z", group("h2o", "niah", 4, 4)), "");
    writer.commit();
  }
  EXPECT_EQ(load_trend(*reader, 0.0).runs, 1);  // the file it opened, unchanged
  EXPECT_EQ(count(*reader, "cells"), 4);
  EXPECT_EQ(load_trend(*open_history_read(path), 0.0).runs, 2);
  for (const auto& e : fs::directory_iterator(d))  // no journal, no temporary
    EXPECT_TRUE(e.is_directory() || e.path() == path) << e.path();
  fs::remove_all(d);
}

// A run folder of several models ("models"): one history run per model with
// that model's cells, a series per model, and a Model column in show; runs
// of one model on two different files never share a series either.
TEST(History, RunsOfSeveralModelsAreOneHistoryRunPerModel) {
  const std::string d = scratch("models");
  auto make = [&](const std::string& commit, const std::string& started, int gemma_failing) {
    const json models =
        json::array({{{"path", d + "/a.gguf"}, {"label", "Small|LM"}, {"sha256", "aa11"}},
                     {{"path", d + "/b.gguf"}, {"label", "Gemma"}, {"sha256", "bb22"}}});
    const json meta = {{"git_commit", commit},
                       {"started_utc", started},
                       {"models", models},
                       {"cpu", "Test CPU"},
                       {"cores", 2}};
    json config = {{"name", "two"}, {"models", json::array()}};
    for (const auto& m : models)
      config["models"].push_back({{"path", m["path"]}, {"label", m["label"]}});
    RunFolder f = RunFolder::create(d + "/runs", "run-" + commit, config, meta);
    for (const std::string model : {"Small|LM", "Gemma"}) {
      const auto cells = group("full", "passkey", 6, model == "Gemma" ? gemma_failing : 0);
      for (size_t k = 0; k < cells.size(); ++k) {
        const std::string id = (model == "Gemma" ? "g" : "s") + std::to_string(k);
        f.write_cell(
            id, json{{"id", id},
                     {"model", {{"label", model}, {"sha256", model == "Gemma" ? "bb22" : "aa11"}}},
                     {"instance", {{"id", cells[k].instance}, {"task", "passkey"}}},
                     {"policy", {{"label", "full"}, {"spec", "full"}}},
                     {"score", cells[k].score}});
      }
    }
    return f.dir();
  };
  HistoryWriter writer(d + "/h.sqlite");
  const Db& db = writer.db();
  const AddResult r1 = add_run(db, make("aaaaaaa1", "2026-11-21T07:00:00Z", 0), "");
  EXPECT_EQ(r1.runs, 2);
  EXPECT_EQ(r1.cells_added, 12);
  // Gemma loses all six at the next commit; SmolLM keeps them.
  EXPECT_EQ(add_run(db, make("bbbbbbb2", "2026-11-22T07:00:00Z", 6), "").cells_added, 12);
  EXPECT_EQ(count(db, "runs"), 4);
  Stmt labels(db, "SELECT DISTINCT model_label FROM runs ORDER BY model_label", "runs");
  ASSERT_TRUE(labels.step());
  EXPECT_EQ(labels.text(0), "Gemma");
  ASSERT_TRUE(labels.step());
  EXPECT_EQ(labels.text(0), "Small|LM");
  const Trend t = load_trend(db, 0.0);
  ASSERT_EQ(t.series.size(), 2u);
  for (const Series& s : t.series) {
    ASSERT_EQ(s.points.size(), 2u) << s.model;
    EXPECT_EQ(s.points[0].score.n, 6) << s.model;  // each model's own instances, not pooled
    EXPECT_EQ(s.points[1].regressed, s.model == "Gemma") << s.model;
  }
  const std::string md = show_markdown(t, d + "/h.sqlite");
  EXPECT_NE(md.find("| Model | Configuration | Task | aaaaaaa | bbbbbbb |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| Small\\|LM | full | passkey | 1.000"), std::string::npos) << md;
  EXPECT_NE(md.find("- two / Gemma / full / passkey at bbbbbbb"), std::string::npos) << md;
  EXPECT_NE(plot_script(t, d + "/t.png").find("'Gemma: full'"), std::string::npos);
  // A cell naming a model the run does not list is refused, nothing written.
  const std::string bad = make("ccccccc3", "2026-11-23T07:00:00Z", 0);
  json c = json::parse(std::ifstream(bad + "/cells/g0.json"));
  c["model"]["label"] = "Other";
  std::ofstream(bad + "/cells/g0.json") << c.dump();
  try {
    add_run(db, bad, "");
    ADD_FAILURE() << "accepted a cell of an unlisted model";
  } catch (const InputError& e) {
    EXPECT_NE(
        std::string(e.what()).find("g0.json: /model/label: 'Other' is not one of the run's models"),
        std::string::npos)
        << e.what();
  }
  EXPECT_EQ(count(db, "runs"), 4);

  // Single-model runs of one experiment on two files: two series.
  const std::string e = scratch("models-single");
  HistoryWriter writer2(e + "/h.sqlite");
  const Db& db2 = writer2.db();
  add_run(db2,
          make_run(e + "/runs", "aaaaaaa1", "2026-11-21T07:00:00Z", group("full", "passkey", 4, 0)),
          "");
  const std::string other =
      make_run(e + "/runs2", "bbbbbbb2", "2026-11-22T07:00:00Z", group("full", "passkey", 4, 4));
  json meta = json::parse(std::ifstream(other + "/meta.json"));
  meta["model_sha256"] = "cd34cd34cd34cd34";
  std::ofstream(other + "/meta.json") << meta.dump();
  add_run(db2, other, "");
  const Trend t2 = load_trend(db2, 0.0);
  ASSERT_EQ(t2.series.size(), 2u);
  EXPECT_EQ(t2.series[0].points.size(), 1u);
  EXPECT_FALSE(t2.series[1].points[0].regressed);  // a model change is not a regression
  EXPECT_NE(show_markdown(t2, e + "/h.sqlite").find("| cd34cd34cd34 | full | passkey |"),
            std::string::npos);
  fs::remove_all(d);
  fs::remove_all(e);
}

TEST(History, ForeignNewerAndCorruptFilesAreOneErrorLine) {
  const std::string d = scratch("hostile");
  // Not SQLite at all.
  std::ofstream(d + "/text.sqlite") << std::string(5000, 'x');
  test::expect_input_error(test::run_kvbench("history show --db " + d + "/text.sqlite"),
                           d + "/text.sqlite: ");
  // Another program's database: refused, and left as it was.
  {
    Db other(d + "/other.sqlite", Db::Mode::Create);
    other.exec("CREATE TABLE customers(name TEXT)");
  }
  const auto before = fs::file_size(d + "/other.sqlite");
  test::expect_input_error(test::run_kvbench("history add " + d + " --db " + d + "/other.sqlite"),
                           d + "/other.sqlite: not a kvbench history: it holds table customers");
  EXPECT_EQ(fs::file_size(d + "/other.sqlite"), before);
  // A newer kvbench's file.
  {
    Db newer(d + "/newer.sqlite", Db::Mode::Create);
    newer.exec("PRAGMA user_version = 99");
  }
  test::expect_input_error(test::run_kvbench("history show --db " + d + "/newer.sqlite"),
                           "schema version 99 is not one this kvbench knows");
  // A history file whose pages were overwritten: a valid header, damaged
  // b-tree pages.
  const std::string good = d + "/good.sqlite";
  {
    HistoryWriter writer(good);
    add_run(
        writer.db(),
        make_run(d + "/runs", "abcdef1", "2026-11-22T07:00:00Z", group("h2o", "passkey", 300, 7)),
        "");
    writer.commit();
  }
  ASSERT_GT(fs::file_size(good), 3 * 4096u);
  {
    std::fstream f(good, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);  // page 2 onwards: table roots and cell pages
    const std::string junk(2 * 4096, '\xA5');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  const test::CliResult r = test::run_kvbench("history show --db " + good);
  test::expect_input_error(r, good + ": ");
  test::expect_input_error(test::run_kvbench("history plot --db " + good + " -o " + d + "/p.png"),
                           good + ": ");
  EXPECT_FALSE(fs::exists(d + "/p.png"));
  // A cell whose score is text: the reader checks every column's type.
  {
    HistoryWriter writer(d + "/typed.sqlite");
    add_run(
        writer.db(),
        make_run(d + "/runs2", "abcdef1", "2026-11-22T07:00:00Z", group("h2o", "passkey", 2, 0)),
        "");
    writer.db().exec("UPDATE cells SET score = 'high'");
    writer.commit();
  }
  test::expect_input_error(test::run_kvbench("history show --db " + d + "/typed.sqlite"),
                           "cells.score: expected a number");
  // A missing database is not created by show.
  test::expect_input_error(test::run_kvbench("history show --db " + d + "/none.sqlite"),
                           "none.sqlite: cannot open");
  EXPECT_FALSE(fs::exists(d + "/none.sqlite"));
  // A run folder without meta.json adds nothing.
  RunFolder::create(d + "/bare", "bare", json{{"name", "bare"}}, json::object());
  fs::remove(d + "/bare/" + fs::directory_iterator(d + "/bare")->path().filename().string() +
             "/meta.json");
  test::expect_input_error(
      test::run_kvbench("history add " + fs::directory_iterator(d + "/bare")->path().string() +
                        " --db " + d + "/fresh.sqlite"),
      "meta.json: missing");
  EXPECT_FALSE(fs::exists(d + "/fresh.sqlite"));
  fs::remove_all(d);
}

// Labels full of gnuplot's and markdown's specials reach the plot only as
// string literals and the table only escaped: nothing runs, every row keeps
// its columns.
TEST(History, HostileLabelsStayText) {
  const std::string d = scratch("labels");
  const std::string marker = d + "/pwned";
  const std::vector<std::string> labels = {
      "it's \"quoted\"", "line\nbreak' ; system('touch " + marker + "') ; '",
      "@macro `touch " + marker + "` $x {sub}_^ \\ & ~", "a|b | c", "\x1b[31mred\x07"};
  std::vector<CellSpec> cells;
  for (const auto& l : labels) {
    const auto g = group(l, "pass'key\n", 4, 0);
    cells.insert(cells.end(), g.begin(), g.end());
  }
  std::vector<CellSpec> worse;
  for (const auto& l : labels) {
    const auto g = group(l, "pass'key\n", 4, 4);
    worse.insert(worse.end(), g.begin(), g.end());
  }
  {
    HistoryWriter writer(d + "/h.sqlite");
    add_run(writer.db(), make_run(d, "commit'1\n", "2026-11-21T07:00:00Z", cells, "exp`x`"), "");
    add_run(writer.db(), make_run(d, "commit;2", "2026-11-22T07:00:00Z", worse, "exp`x`"), "");
    writer.commit();
  }
  const Trend t = load_trend(*open_history_read(d + "/h.sqlite"), 0.0);
  ASSERT_EQ(t.series.size(), labels.size());

  // The script: every label appears only as its plot::label literal, and
  // no line of the script holds a raw piece of a label after a newline.
  const std::string script = plot_script(t, d + "/trend.png");
  for (const auto& l : labels) EXPECT_NE(script.find(plot::label(l)), std::string::npos) << l;
  EXPECT_EQ(script.find("\nbreak"), std::string::npos);
  EXPECT_EQ(script.find('\x1b'), std::string::npos);
  EXPECT_EQ(script.find("system('touch"), std::string::npos);  // only as ''touch
  // gnuplot draws it and runs nothing.
  write_trend_plot(t, d + "/trend.png");
  EXPECT_GT(fs::file_size(d + "/trend.png"), 1000u);
  write_trend_plot(t, d + "/trend.svg");
  EXPECT_GT(fs::file_size(d + "/trend.svg"), 1000u);
  EXPECT_FALSE(fs::exists(marker));
  for (const auto& e : fs::directory_iterator(d))  // no temporaries left
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();

  // The table: no raw control characters, and every row as many cells as
  // its header.
  const std::string md = show_markdown(t, "h.sqlite");
  EXPECT_EQ(md.find('\x1b'), std::string::npos);
  EXPECT_EQ(md.find('\x07'), std::string::npos);
  std::istringstream lines(md);
  std::string line;
  long columns = -1;
  bool in_table = false;
  while (std::getline(lines, line)) {
    if (line.rfind("| Configuration |", 0) == 0) in_table = true;
    if (!in_table) continue;
    if (line.empty()) break;
    long bars = 0;
    for (size_t i = 0; i < line.size(); ++i)
      bars += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    if (columns < 0) columns = bars;
    EXPECT_EQ(bars, columns) << line;
  }
  EXPECT_EQ(columns, 5);  // configuration, task, two commits
  EXPECT_NE(md.find("▼"), std::string::npos) << md;
  // Bad output names are refused before gnuplot runs.
  EXPECT_THROW(write_trend_plot(t, d + "/trend.pdf"), InputError);
  fs::create_directories(d + "/dir.png");
  EXPECT_THROW(write_trend_plot(t, d + "/dir.png"), InputError);
  fs::remove_all(d);
}

// Counts in show's first line agree with their number ("1 commit").
TEST(History, ShowCountsAreSingularForOne) {
  Trend t;
  t.runs = 1;
  t.cells = 1;
  t.commits.push_back(CommitInfo{});
  const std::string md = show_markdown(t, "h.sqlite");
  EXPECT_NE(md.find("1 run, 1 cell, 1 commit."), std::string::npos) << md;
}

// A run built with uncommitted changes is not the commit's: it is a point of
// its own, after the clean one and labelled "+dirty", so a drop it shows is
// never charged to the commit (and a clean run of the commit keeps its id).
TEST(History, RunsWithUncommittedChangesAreAPointOfTheirOwn) {
  const std::string d = scratch("dirty");
  HistoryWriter writer(d + "/h.sqlite");
  const Db& db = writer.db();
  const AddResult clean = add_run(
      db, make_run(d + "/a", "aaaaaaa1", "2026-11-21T07:00:00Z", group("h2o", "niah", 8, 0)), "");
  EXPECT_FALSE(clean.git_dirty);
  const AddResult dirty = add_run(db,
                                  make_run(d + "/b", "aaaaaaa1", "2026-11-21T07:00:00Z",
                                           group("h2o", "niah", 8, 8), "tiny", true),
                                  "");
  EXPECT_TRUE(dirty.git_dirty);
  EXPECT_NE(dirty.run_id, clean.run_id);  // same commit and start, another build
  EXPECT_EQ(dirty.cells_added, 8);
  const Trend t = load_trend(db, 0.0);
  ASSERT_EQ(t.commits.size(), 2u);
  EXPECT_FALSE(t.commits[0].dirty);
  EXPECT_TRUE(t.commits[1].dirty);
  EXPECT_EQ(commit_label(t.commits[0]), "aaaaaaa");
  EXPECT_EQ(commit_label(t.commits[1]), "aaaaaaa+dirty");
  const Series* s = find_series(t, "h2o", "niah");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->points.size(), 2u);
  EXPECT_DOUBLE_EQ(s->points[0].score.mean, 1.0);  // the clean run's scores
  EXPECT_DOUBLE_EQ(s->points[1].score.mean, 0.0);  // not mixed into the commit's
  EXPECT_TRUE(s->points[1].regressed);             // against the clean point before it
  const std::string shown = show_markdown(t, d + "/h.sqlite");
  EXPECT_NE(shown.find("| aaaaaaa+dirty |"), std::string::npos) << shown;
  EXPECT_NE(shown.find("aaaaaaa+dirty (vs aaaaaaa)"), std::string::npos) << shown;
  fs::remove_all(d);
}

// `history show --csv` and `--json`: the points show prints, one CSV row or
// JSON point each, with hostile strings from the database (commas, quotes,
// a line break, a leading '=' or '|', ESC) encoded for each sink: every CSV
// record keeps its 18 fields, no label becomes a formula, no control
// character reaches the terminal; JSON is ASCII and gives the strings back
// exactly.
TEST(History, ShowCsvAndJsonHoldThePointsEncoded) {
  const std::string d = scratch("data");
  const std::vector<std::string> labels = {"=HYPERLINK(\"http://x\"),\"a\"", "|pipe, \"q\"",
                                           "line\nbreak", "\x1b[31mred\x07"};
  std::vector<CellSpec> before, after;
  for (const auto& l : labels) {
    before = join(before, group(l, "passkey", 4, 0));
    after = join(after, group(l, "passkey", 4, l == labels[0] ? 4 : 0));
  }
  {
    HistoryWriter writer(d + "/h.sqlite");
    add_run(writer.db(), make_run(d, "aaaaaaa", "2026-11-21T07:00:00Z", before, "-exp,1"), "");
    add_run(writer.db(), make_run(d, "bbbbbbb", "2026-11-22T07:00:00Z", after, "-exp,1"), "");
    writer.commit();
  }
  const Trend t = load_trend(*open_history_read(d + "/h.sqlite"), 0.0);
  ASSERT_EQ(t.series.size(), labels.size());

  const std::string csv = show_csv(t);
  EXPECT_EQ(csv.find('\x1b'), std::string::npos);
  EXPECT_EQ(csv.find('\x07'), std::string::npos);
  const auto records = parse_csv(csv, "show --csv");
  ASSERT_EQ(records.size(), 1 + labels.size() * 2);  // the header, two points per series
  EXPECT_EQ(records[0], (std::vector<std::string>{"experiment", "model", "configuration", "task",
                                                  "spec", "protocol", "commit", "dirty", "date",
                                                  "date_from", "mean", "ci_lo", "ci_hi", "n",
                                                  "paired", "p_drop", "drop", "regressed"}));
  std::map<std::string, std::vector<std::vector<std::string>>> rows;  // configuration -> rows
  for (size_t i = 1; i < records.size(); ++i) {
    ASSERT_EQ(records[i].size(), 18u) << i;
    EXPECT_EQ(records[i][0], "'-exp,1");  // a leading '-' could start a formula
    EXPECT_EQ(records[i][1], "ab12");
    EXPECT_EQ(records[i][5], "query_aware");
    rows[records[i][2]].push_back(records[i]);
  }
  // Each hostile label, as one field: a formula's '=' quoted away, the line
  // break and the controls as visible escapes.
  const std::vector<std::string> expected = {"'=HYPERLINK(\"http://x\"),\"a\"", "|pipe, \"q\"",
                                             "line\\nbreak", "\\x1b[31mred\\x07"};
  for (const auto& e : expected) EXPECT_EQ(rows[e].size(), 2u) << e;
  const auto& dropped = rows[expected[0]];
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[0][6], "aaaaaaa");
  EXPECT_EQ(dropped[0][8], "2026-11-21");
  EXPECT_EQ(dropped[0][9], "run");  // no git asked
  EXPECT_EQ(dropped[0][10], "1");
  EXPECT_EQ(dropped[0][13], "4");
  EXPECT_EQ(dropped[0][14], "");  // the first point: nothing to pair with
  EXPECT_EQ(dropped[0][17], "false");
  EXPECT_EQ(dropped[1][6], "bbbbbbb");
  EXPECT_EQ(dropped[1][10], "0");
  EXPECT_EQ(dropped[1][14], "4");
  EXPECT_EQ(dropped[1][15], "0.03125");  // four of four failing: mid-p 2^-5
  EXPECT_EQ(dropped[1][16], "1");
  EXPECT_EQ(dropped[1][17], "true");
  EXPECT_EQ(rows[expected[1]][1][17], "false");

  const std::string text = show_json(t, d + "/h.sqlite");
  for (const char c : text)
    ASSERT_TRUE(static_cast<unsigned char>(c) < 0x80 && (c >= 0x20 || c == '\n'));
  const json j = json::parse(text);
  EXPECT_EQ(j["schema"], kHistoryJsonSchema);
  EXPECT_EQ(j["runs"], 2);
  EXPECT_EQ(j["cells"], 32);
  ASSERT_EQ(j["commits"].size(), 2u);
  EXPECT_EQ(j["commits"][1]["commit"], "bbbbbbb");
  EXPECT_EQ(j["commits"][1]["date_from"], "run");
  ASSERT_EQ(j["series"].size(), labels.size());
  std::set<std::string> seen;
  for (const json& s : j["series"]) {
    seen.insert(s["configuration"].get<std::string>());
    EXPECT_EQ(s["experiment"], "-exp,1");
    EXPECT_EQ(s["protocol"], "query_aware");
    ASSERT_EQ(s["points"].size(), 2u);
    EXPECT_TRUE(s["points"][0]["paired"].is_null());
    EXPECT_TRUE(s["points"][0]["p_drop"].is_null());
    const bool dropped_series = s["configuration"] == labels[0];
    EXPECT_EQ(s["points"][1]["regressed"], dropped_series);
    EXPECT_EQ(s["points"][1]["commit"], 1);
    EXPECT_DOUBLE_EQ(s["points"][1]["mean"].get<double>(), dropped_series ? 0.0 : 1.0);
    EXPECT_EQ(s["points"][1]["n"], 4);
  }
  EXPECT_EQ(seen, std::set<std::string>(labels.begin(), labels.end()));  // exactly, ESC included
  fs::remove_all(d);
}

// The CLI: --csv and --json print what show_csv and show_json give, and
// together are one error line.
TEST(History, ShowCsvAndJsonOnTheCommandLine) {
  const std::string d = scratch("cli");
  const std::string run =
      make_run(d, "aaaaaaa", "2026-11-21T07:00:00Z", group("h2o", "niah", 4, 1));
  const std::string db = d + "/h.sqlite";
  const test::CliResult add =
      test::run_kvbench("history add " + run + " --db " + db + " --repo ''");
  ASSERT_EQ(add.code, 0) << add.err;
  const Trend t = load_trend(*open_history_read(db), 0.0);
  const test::CliResult csv = test::run_kvbench("history show --csv --db " + db);
  EXPECT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv.out, show_csv(t));
  const test::CliResult js = test::run_kvbench("history show --json --db " + db);
  EXPECT_EQ(js.code, 0) << js.err;
  EXPECT_EQ(js.out, show_json(t, db));
  test::expect_input_error(test::run_kvbench("history show --csv --json --db " + db),
                           "--csv and --json");
  EXPECT_NE(test::run_kvbench("history show --help").out.find("--json"), std::string::npos);
  fs::remove_all(d);
}

// history add's --repo (issue 38): its help names no path of the build
// machine; a --repo that is missing, a file or not a git repository is
// checked before anything is written; the default is the current
// directory's repository when there is one, and nothing outside one.
TEST(History, RepoIsCheckedAndNeverABuildPath) {
  const std::string d = scratch("repo");
  const std::string run =
      make_run(d, "aaaaaaa", "2026-11-21T07:00:00Z", group("h2o", "niah", 4, 1));
  const test::CliResult help = test::run_kvbench("history add --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("the current directory's"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find(KVBENCH_SOURCE_DIR), std::string::npos) << help.out;

  // A --repo that is missing, a file, or not a git repository: one line,
  // exit 2, no database and no temporary written.
  fs::create_directories(d + "/plain");
  std::ofstream(d + "/file") << "x";
  const std::string fresh = d + "/fresh.sqlite";
  for (const auto& [repo, why] :
       std::vector<std::pair<std::string, std::string>>{{d + "/none", "no such directory"},
                                                        {d + "/file", "not a directory"},
                                                        {d + "/plain", "not a git repository"}}) {
    test::expect_input_error(
        test::run_kvbench("history add " + run + " --db " + fresh + " --repo " + repo),
        "--repo " + repo + ": " + why);
    EXPECT_FALSE(fs::exists(fresh)) << repo;
  }
  for (const auto& e : fs::directory_iterator(d))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  // The default: the current directory's repository when there is one (the
  // source tree, which knows its own HEAD: the commit's date comes from git),
  // nothing asked outside one (the run's start stands in).
  const Captured head = run_capture({"git", "-C", KVBENCH_SOURCE_DIR, "rev-parse", "HEAD"});
  ASSERT_EQ(head.code, 0);
  const std::string known = make_run(d + "/known", head.out.substr(0, 40), "2026-11-21T07:00:00Z",
                                     group("h2o", "niah", 4, 1));
  const test::CliResult in_repo = test::run_kvbench_in(
      KVBENCH_SOURCE_DIR, "history add " + known + " --db " + d + "/in.sqlite");
  EXPECT_EQ(in_repo.code, 0) << in_repo.err;
  EXPECT_TRUE(load_trend(*open_history_read(d + "/in.sqlite"), 0.0).commits.at(0).commit_time);
  const test::CliResult outside =
      test::run_kvbench_in(d + "/plain", "history add " + known + " --db " + d + "/out.sqlite");
  EXPECT_EQ(outside.code, 0) << outside.err;
  EXPECT_FALSE(load_trend(*open_history_read(d + "/out.sqlite"), 0.0).commits.at(0).commit_time);
  fs::remove_all(d);
}

}  // namespace
}  // namespace kvbench::history
