// Where a merged run's cells were computed when its folders ran on different
// machines or builds (kvbench merge): meta.json's "machines", one entry per
// distinct CPU, commit and dirty flag, with the shards that ran there, in
// order of first appearance:
//
//   "git_commit": "9893b39...",
//   "machines": [{"cpu": "Intel Xeon ...", "shards": [[1, 22]]},
//                {"cpu": "AMD EPYC", "shards": [[23, 52]]}]
//
// "shards" holds inclusive ranges of shard indexes (--shard I/N); folders that
// are no shard count in "runs". A merge whose folders all agree keeps the one
// "cpu" and "git_commit" on top instead, as a single run does; a field every
// folder shares (the commit above) is said on top only, not in the entries.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvbench {

// A reader's bounds: entries in "machines", and ranges in one entry's "shards".
inline constexpr size_t kMaxMachines = 1000;
inline constexpr size_t kMaxShardRanges = 100000;

// The machines of the merged folders' meta.json (in merge order), grouped as
// above. One entry when every folder agrees.
nlohmann::json machines_of(const std::vector<nlohmann::json>& metas);

// Checks a "machines" value of `file` at JSON pointer `at` (a bounded array of
// objects: short strings, a boolean, sorted ranges within 1..1e6, a count);
// InputError naming both otherwise.
void check_machines(const nlohmann::json& list, const std::string& file, const std::string& at);

// One line for a report, e.g. "AMD EPYC, kvbench commit 9893b39: shards 23–52;
// Intel Xeon, kvbench commit 9893b39: shards 1–22". Not encoded for any sink.
std::string machines_text(const nlohmann::json& list);

}  // namespace kvbench
