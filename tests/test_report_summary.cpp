// The report's generated sentences on constructed runs whose answer is
// known: which configuration keeps most at which memory, which the paired
// test cannot tell from the full cache, which fall below it, which collapse.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/report/summary.h"
#include "harness/report/table.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

json cell(int instance, int index, const std::string& label, double score, double bytes) {
  const std::string inst = "passkey-" + std::to_string(instance);
  return {{"id", inst + "--" + label},
          {"instance", {{"id", inst}, {"task", "passkey"}, {"length", 1024}, {"depth", 0.5}}},
          {"policy", {{"index", index}, {"label", label}, {"is_reference", index == 0}}},
          {"score", score},
          {"memory", {{"kv_bytes_hot", bytes}}}};
}

// Ten instances. full: 10 of 10 at 4000 bytes. keeps: 9 of 10 (fails the
// last) at 25%. drops: 0 of 10 at 25%. tiny: 5 of 10 (the first five) at 12.5%.
std::vector<json> constructed() {
  std::vector<json> cells;
  for (int i = 0; i < 10; ++i) {
    cells.push_back(cell(i, 0, "full", 1.0, 4000));
    cells.push_back(cell(i, 1, "keeps", i < 9 ? 1.0 : 0.0, 1000));
    cells.push_back(cell(i, 2, "drops", 0.0, 1000));
    cells.push_back(cell(i, 3, "tiny", i < 5 ? 1.0 : 0.0, 500));
  }
  return cells;
}

std::string all(const std::vector<std::string>& sentences) {
  std::string s;
  for (const auto& x : sentences) s += x + "\n";
  return s;
}

// The sentence that starts with `prefix` ("" when none does).
std::string starting(const std::vector<std::string>& sentences, const std::string& prefix) {
  for (const auto& s : sentences)
    if (s.rfind(prefix, 0) == 0) return s;
  return "";
}

TEST(ReportSummary, SaysWhatKeepsMostAtWhichMemoryWithoutCallingNoiseADifference) {
  const auto cells = constructed();
  const auto s = summary_sentences(cells, build_table(cells));
  const std::string text = all(s);
  EXPECT_EQ(s.front(),
            "The full cache (full) scores 1.000 [0.722, 1.000] (n=10), Wilson 95% interval, all "
            "tasks pooled.");
  // The front: tiny at 12.5% (nothing else needs so little), keeps at 25%
  // (above tiny by 4 discordant pairs, all one way: one-sided mid-p McNemar
  // p = 1/32, significant), full at 100% (above keeps by one instance:
  // p = 0.25).
  EXPECT_EQ(starting(s, "What keeps the most"),
            "What keeps the most at each memory (the Pareto front of score against KV memory): "
            "at 12.5% of the full cache's memory or less, tiny: 0.500 [0.237, 0.763] (n=10); "
            "at 25% of the full cache's memory or less, keeps: 0.900 [0.596, 0.982] (n=10), "
            "significantly above tiny's 0.500 (McNemar p = 0.0312) and "
            "at 100% of the full cache's memory or less, full: 1.000 [0.722, 1.000] (n=10), "
            "not significantly above keeps's 0.900 (McNemar p = 0.25).")
      << text;
  // Against the full cache: drops lost all ten (p = 2^-11) and tiny five
  // (p = 2^-6); keeps lost one (p = 0.25): not called a drop, and the next
  // sentence says how large a drop ten instances can show.
  EXPECT_EQ(starting(s, "Significantly below"),
            "Significantly below the full cache on the same instances: tiny at 12.5% (0.500 "
            "[0.237, 0.763], McNemar p = 0.0156) and drops at 25% (0.000 [0.000, 0.278], McNemar "
            "p = 0.000488).")
      << text;
  EXPECT_EQ(starting(s, "Not significantly different"),
            "Not significantly different from the full cache on the same instances (p >= 0.05): "
            "keeps at 25% (0.900 [0.596, 0.982], McNemar p = 0.25).")
      << text;
  EXPECT_NE(text.find("With 10 paired instances the one-sided McNemar test calls a drop "
                      "significant only from 4 of 10 instances lost and none gained (40%)"),
            std::string::npos)
      << text;
  EXPECT_EQ(starting(s, "The least memory"),
            "The least memory not significantly below the full cache: keeps at 25% (its 10 paired "
            "instances could show a drop of 4 of 10 instances or more, no smaller one).")
      << text;
  EXPECT_EQ(starting(s, "Collapsed"),
            "Collapsed (the 95% interval's upper end is below half the full cache's score): drops "
            "at 25%.")
      << text;
  EXPECT_EQ(starting(s, "Significantly above"), "") << text;
}

TEST(ReportSummary, CallsALeadSignificantOnlyWhenThePairedTestDoes) {
  std::vector<json> cells;
  for (const auto& c : constructed())
    if (c["policy"]["label"] != "tiny") cells.push_back(c);
  const auto s = summary_sentences(cells, build_table(cells));
  // keeps passes nine instances that drops fails: one-sided mid-p McNemar
  // p = 2^-10.
  EXPECT_NE(
      starting(s, "What keeps the most")
          .find("at 25% of the full cache's memory or less, keeps: 0.900 [0.596, 0.982] "
                "(n=10), significantly above drops's 0.000 (McNemar p = 0.000977) and at 100%"),
      std::string::npos)
      << all(s);
  EXPECT_EQ(starting(s, "The least memory"),
            "The least memory not significantly below the full cache: keeps at 25% (its 10 paired "
            "instances could show a drop of 4 of 10 instances or more, no smaller one).");
}

// Two instances: no drop can be significant, so a configuration that lost
// both is not named as holding the full cache's score at its memory.
TEST(ReportSummary, NoLeastMemoryClaimWhereNoDropCouldBeSeen) {
  std::vector<json> cells;
  for (const auto& c : constructed()) {
    const std::string id = c["instance"]["id"].get<std::string>();
    if (id.back() == '0' || id.back() == '1') cells.push_back(c);
  }
  const auto s = summary_sentences(cells, build_table(cells));
  EXPECT_EQ(starting(s, "The least memory"), "") << all(s);
  EXPECT_NE(all(s).find("can call no drop significant"), std::string::npos) << all(s);
}

// A leaderboard's hundred configurations: a sentence names the first eight
// (least memory first) and counts the rest.
TEST(ReportSummary, ALongListNamesEightAndCountsTheRest) {
  std::vector<json> cells;
  for (int i = 0; i < 10; ++i) {
    cells.push_back(cell(i, 0, "full", 1.0, 4000));
    for (int k = 1; k <= 12; ++k)
      cells.push_back(cell(i, k, "c" + std::to_string(k), 1.0, 100 * k));
  }
  const auto s = summary_sentences(cells, build_table(cells));
  const std::string same = starting(s, "Not significantly different");
  EXPECT_NE(same.find("c8 at 20%"), std::string::npos) << same;
  EXPECT_EQ(same.find("c9 at"), std::string::npos) << same;
  EXPECT_NE(same.find(" and 4 more (the table lists each)."), std::string::npos) << same;
}

TEST(ReportSummary, WithoutAFullCacheSaysSoAndNamesTheBestScore) {
  std::vector<json> cells;
  for (const auto& c : constructed())
    if (c["policy"]["label"] != "full") cells.push_back(c);
  const auto s = summary_sentences(cells, build_table(cells));
  ASSERT_EQ(s.size(), 1u) << all(s);
  EXPECT_EQ(s[0],
            "The run has no full-cache cells, so memory and retention have no reference; the "
            "highest mean score is keeps's, 0.900 [0.596, 0.982] (n=10).");
}

}  // namespace
}  // namespace kvbench
