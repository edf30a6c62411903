// meta.json's "machines" (harness/run/machines.h): how kvbench merge groups its
// folders' CPUs and builds, what the reader refuses, and the report's line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/run/machines.h"
#include "model/common/error.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

json shard_meta(int index, const std::string& cpu, const std::string& commit) {
  return {{"cpu", cpu}, {"git_commit", commit}, {"shard", {{"index", index}, {"count", 52}}}};
}

TEST(Machines, ShardsAreGroupedByCpuAndCommitAsRanges) {
  std::vector<json> metas;
  for (int i = 1; i <= 22; ++i) metas.push_back(shard_meta(i, "Intel Xeon", "9893b39"));
  for (int i = 52; i >= 23; --i) metas.push_back(shard_meta(i, "AMD EPYC", "9893b39"));
  metas.push_back(shard_meta(5, "AMD EPYC", "9893b39"));  // a shard rerun elsewhere
  json dirty = shard_meta(60, "AMD EPYC", "9893b39");
  dirty["git_dirty"] = true;
  metas.push_back(dirty);
  metas.push_back({{"cpu", "Intel Xeon"}, {"git_commit", "9893b39"}});  // no shard
  const json m = machines_of(metas);
  const json expected = json::parse(R"([
    {"cpu": "Intel Xeon", "git_commit": "9893b39", "shards": [[1, 22]], "runs": 1},
    {"cpu": "AMD EPYC", "git_commit": "9893b39", "shards": [[5, 5], [23, 52]]},
    {"cpu": "AMD EPYC", "git_commit": "9893b39", "git_dirty": true, "shards": [[60, 60]]}])");
  EXPECT_EQ(m, expected) << m.dump();
  EXPECT_NO_THROW(check_machines(m, "meta.json", "/machines"));
  EXPECT_EQ(machines_text(m),
            "Intel Xeon, kvbench commit 9893b39: shards 1–22 and 1 unsharded run; AMD EPYC, "
            "kvbench commit 9893b39: shards 5, 23–52; AMD EPYC, kvbench commit 9893b39 (built with "
            "uncommitted changes): shard 60");
  // All alike: one entry.
  EXPECT_EQ(machines_of({shard_meta(1, "A", "c"), shard_meta(2, "A", "c")}).size(), 1u);
}

TEST(Machines, AFolderMergedBeforeKeepsItsList) {
  const json merged = {{"machines", json::parse(R"([
      {"cpu": "A", "git_commit": "c", "shards": [[1, 3]]},
      {"cpu": "B", "git_commit": "c", "shards": [[4, 4]], "runs": 2}])")}};
  const json m = machines_of({merged, shard_meta(5, "B", "c"), shard_meta(7, "A", "c")});
  EXPECT_EQ(m, json::parse(R"([{"cpu": "A", "git_commit": "c", "shards": [[1, 3], [7, 7]]},
                               {"cpu": "B", "git_commit": "c", "shards": [[4, 5]], "runs": 2}])"))
      << m.dump();
  // Its commit said once on top belongs to each of its machines.
  const json shared = {{"git_commit", "c"},
                       {"machines", json::parse(R"([{"cpu": "A", "shards": [[1, 3]]},
                                                    {"cpu": "B", "shards": [[4, 4]]}])")}};
  EXPECT_EQ(machines_of({shared, shard_meta(5, "B", "d")}),
            json::parse(R"([{"cpu": "A", "git_commit": "c", "shards": [[1, 3]]},
                            {"cpu": "B", "git_commit": "c", "shards": [[4, 4]]},
                            {"cpu": "B", "git_commit": "d", "shards": [[5, 5]]}])"));
  // A missing CPU reads as unknown, not as an empty name.
  EXPECT_EQ(machines_text(json::parse(R"([{"runs": 1}])")), "unknown CPU: 1 unsharded run");
}

TEST(Machines, TheReaderRefusesMalformedLists) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"([])", "/machines: expected an array of 1 to 1000 machines"},
      {R"({"cpu": "A"})", "/machines: expected an array"},
      {R"([3])", "/machines/0: expected an object"},
      {R"([{"cpu": "A"}])", "/machines/0: expected \"shards\" or \"runs\""},
      {R"([{"cpu": 7, "runs": 1}])", "/machines/0/cpu: expected a string of at most 256 bytes"},
      {R"([{"git_dirty": "yes", "runs": 1}])", "/machines/0/git_dirty: expected true or false"},
      {R"([{"runs": 0}])", "/machines/0/runs: expected a count from 1 to 1e6"},
      {R"([{"shards": []}])", "/machines/0/shards: expected an array of 1 to 100000 ranges"},
      {R"([{"shards": [[3, 1]]}])", "/machines/0/shards/0: expected [first, last]"},
      {R"([{"shards": [[0, 1]]}])", "/machines/0/shards/0: expected [first, last]"},
      {R"([{"shards": [[1, 4], [4, 5]]}])", "/machines/0/shards/1: expected [first, last]"},
      {R"([{"shards": [[1, 2000000]]}])", "/machines/0/shards/0: expected [first, last]"},
      {R"([{"shards": [[1, 2, 3]]}])", "/machines/0/shards/0: expected [first, last]"},
      {R"([{"shards": [["1", 2]]}])", "/machines/0/shards/0: expected [first, last]"},
  };
  for (const auto& [text, message] : cases) {
    try {
      check_machines(json::parse(text), "run/meta.json", "/machines");
      ADD_FAILURE() << text << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("run/meta.json: " + message), std::string::npos)
          << text << ": " << e.what();
    }
  }
  json many = json::array();
  for (int i = 0; i < 1001; ++i) many.push_back({{"runs", 1}});
  EXPECT_THROW(check_machines(many, "m", "/machines"), InputError);
  json cpu = json::parse(R"([{"runs": 1}])");
  cpu[0]["cpu"] = std::string(257, 'x');
  EXPECT_THROW(check_machines(cpu, "m", "/machines"), InputError);
}

}  // namespace
}  // namespace kvbench
