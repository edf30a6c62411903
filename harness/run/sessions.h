// The invocations that made a run folder (meta.json's "sessions"): when each
// started, how long it ran, how many cells it finished, on which CPU and from
// which commit. A run resumed across sessions, machines or binaries says so,
// and its wall time is measured rather than guessed.
//
//   "sessions": [{"started_utc": "2026-11-29T16:33:21Z", "seconds": 412.5,
//                 "cells": 230, "cpu": "...", "git_commit": "...",
//                 ["git_dirty": true,] "threads": 1, ["shard": 17]}, ...]
//
// "seconds" and "cells" are written after every instance, so a session that
// was killed keeps what it had finished (up to one instance's time is lost; a
// resume killed before its first instance leaves no entry).
// `kvbench merge` concatenates its folders' sessions, each with its shard.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvbench {

// A reader's bound: more sessions than this in one meta.json is an error.
inline constexpr size_t kMaxSessions = 100000;

// A new session from collect_run_meta()'s record of this invocation
// (started_utc, cpu, git_commit, git_dirty, threads), with no time or cells.
nlohmann::json new_session(const nlohmann::json& invocation_meta);

// Checks meta.json's "sessions" when present: InputError naming `file` and the
// field otherwise (a bounded array of objects, a well-formed UTC time, finite
// seconds in [0, 1e9], cells in [0, 1e12], short strings).
void check_sessions(const nlohmann::json& meta, const std::string& file);

struct SessionTime {
  size_t sessions = 0;
  double summed_seconds = 0;         // every session's seconds added
  double wall_seconds = 0;           // the union of the sessions' intervals: time anything ran
  std::vector<std::string> cpus;     // distinct, in first-seen order
  std::vector<std::string> commits;  // likewise
};
// Of a checked "sessions" array.
SessionTime session_time(const nlohmann::json& sessions);

}  // namespace kvbench
