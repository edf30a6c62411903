// meta.json's "sessions" (harness/run/sessions.h): the UTC stamps it reads
// (harness/time_text.h), what its reader refuses, the wall time of
// overlapping sessions, and the report's run-time line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/report/run_time.h"
#include "harness/run/sessions.h"
#include "harness/time_text.h"
#include "model/common/error.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

json session(const std::string& start, double seconds, int64_t cells, const std::string& cpu = "A",
             const std::string& commit = "c1") {
  return {{"started_utc", start}, {"seconds", seconds},   {"cells", cells},
          {"cpu", cpu},           {"git_commit", commit}, {"threads", 1}};
}

TEST(TimeText, UtcStampsAreReadExactly) {
  EXPECT_EQ(parse_utc("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse_utc("2026-11-29T16:33:21Z"), 1795970001);
  EXPECT_EQ(parse_utc("2026-02-30T00:00:00Z"), std::nullopt);  // no such day
  for (const char* bad : {"", "2026-11-29 16:33:21Z", "2026-11-29T16:33:21", "2026-13-01T00:00:00Z",
                          "2026-11-29T24:00:00Z", "2026-11-00T00:00:00Z", "2026-1a-29T16:33:21Z",
                          "2026-11-29T16:33:21Z ", "+026-11-29T16:33:21Z"})
    EXPECT_EQ(parse_utc(bad), std::nullopt) << bad;
}

TEST(Sessions, TheReaderRefusesWhatIsNotASession) {
  EXPECT_NO_THROW(check_sessions(json::object(), "m.json"));
  EXPECT_NO_THROW(check_sessions(
      {{"sessions", json::array({session("2026-11-29T16:33:21Z", 1.5, 3)})}}, "m.json"));
  const auto refused = [](json s, const std::string& field) {
    try {
      check_sessions({{"sessions", json::array({s})}}, "dir/meta.json");
      ADD_FAILURE() << "accepted " << s.dump();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("dir/meta.json: /sessions/0/" + field),
                std::string::npos)
          << e.what();
    }
  };
  json s = session("2026-11-29T16:33:21Z", 1, 1);
  {
    json t = s;
    t.erase("started_utc");
    refused(t, "started_utc");
    t = s;
    t["started_utc"] = "yesterday";
    refused(t, "started_utc");
    t = s;
    t["seconds"] = -1;
    refused(t, "seconds");
    t["seconds"] = 2e9;
    refused(t, "seconds");
    t = s;
    t["seconds"] = "1";
    refused(t, "seconds");
    t = s;
    t["cells"] = 1.5;
    refused(t, "cells");
    t["cells"] = -2;
    refused(t, "cells");
    t = s;
    t["cpu"] = std::string(300, 'x');
    refused(t, "cpu");
    t = s;
    t["shard"] = -1;
    refused(t, "shard");
    t = s;
    t["git_dirty"] = "yes";
    refused(t, "git_dirty");
  }
  EXPECT_THROW(check_sessions({{"sessions", json::array({1})}}, "m.json"), InputError);
  EXPECT_THROW(check_sessions({{"sessions", json::object()}}, "m.json"), InputError);
  json many = json::array();
  for (size_t i = 0; i <= kMaxSessions; ++i) many.push_back(0);
  EXPECT_THROW(check_sessions({{"sessions", many}}, "m.json"), InputError);
}

TEST(Sessions, WallTimeCountsOverlappingSessionsOnce) {
  // Two shards side by side (0-100 s and 50-200 s), then a resumed one alone
  // an hour later (3600-3660 s), and one inside the first (10-20 s).
  const json list = json::array({session("2026-11-29T10:00:00Z", 100, 2, "A", "c1"),
                                 session("2026-11-29T10:00:50Z", 150, 3, "B", "c1"),
                                 session("2026-11-29T11:00:00Z", 60, 1, "A", "c2"),
                                 session("2026-11-29T10:00:10Z", 10, 0, "A", "c1")});
  const SessionTime t = session_time(list);
  EXPECT_EQ(t.sessions, 4u);
  EXPECT_DOUBLE_EQ(t.summed_seconds, 320.0);
  EXPECT_DOUBLE_EQ(t.wall_seconds, 260.0);  // 0-200 and 3600-3660
  EXPECT_EQ(t.cpus, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(t.commits, (std::vector<std::string>{"c1", "c2"}));
  EXPECT_EQ(run_time_text({{"sessions", list}}),
            "4 min 20 s of wall time, 5 min 20 s summed over 4 sessions; CPUs: A, B; commits: "
            "c1, c2");
  EXPECT_EQ(run_time_text({{"sessions", json::array({session("2026-11-29T10:00:00Z", 11520, 9)})}}),
            "3 h 12 min of wall time; CPU: A");
  // The About line names meta.json's CPU already.
  EXPECT_EQ(run_time_text(
                {{"cpu", "A"}, {"sessions", json::array({session("2026-11-29T10:00:00Z", 7, 9)})}}),
            "7 s of wall time");
  EXPECT_EQ(run_time_text(json::object()), "");
}

TEST(Sessions, Durations) {
  EXPECT_EQ(duration_text(0), "0 s");
  EXPECT_EQ(duration_text(7.4), "7 s");
  EXPECT_EQ(duration_text(750), "12 min 30 s");
  EXPECT_EQ(duration_text(11520), "3 h 12 min");
  EXPECT_EQ(duration_text(-5), "0 s");
}

}  // namespace
}  // namespace kvbench
