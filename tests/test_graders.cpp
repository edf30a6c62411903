// Graders on the outputs a small model really produces: answers wrapped in
// prose, markdown, thousands separators, near misses that must not count
// (a prefix of the number, a longer number, the wrong UUID), partial lists.
#include <gtest/gtest.h>

#include "datasets/grader.h"
#include "model/common/error.h"

namespace kvbench {
namespace {

Instance with(std::string grader, std::vector<std::string> answers) {
  Instance in;
  in.id = "t";
  in.task = "test";
  in.grader = std::move(grader);
  in.answers = std::move(answers);
  return in;
}

TEST(Graders, Normalization) {
  EXPECT_EQ(normalize_answer("  The  Pass-Key is **71,432**!\n"), "the pass key is 71432");
  EXPECT_EQ(normalize_answer("1,234,567 and 12,34"),
            "1234567 and 12 34");  // "12,34" is no thousands group
  EXPECT_EQ(normalize_answer("Dolores\tPark."), "dolores park");
  EXPECT_EQ(normalize_answer(""), "");
}

TEST(Graders, ContainsMatchesWholeWordsOnly) {
  const Instance in = with("contains", {"3885188"});
  EXPECT_EQ(grade(in, " 3885188."), 1.0);
  EXPECT_EQ(grade(in, "The number is **3,885,188**"), 1.0);
  EXPECT_EQ(grade(in, " 38851889."), 0.0);  // a longer number is wrong
  EXPECT_EQ(grade(in, " 388518."), 0.0);    // a prefix is wrong
  EXPECT_EQ(grade(in, ""), 0.0);
  const Instance place = with("contains", {"Marlow Park"});
  EXPECT_EQ(grade(place, " to eat a sandwich and sit in marlow park on a sunny day."), 1.0);
  EXPECT_EQ(grade(place, " Marlow Parkway"), 0.0);
  EXPECT_EQ(grade(place, " Marlow"), 0.0);
  const Instance uuid = with("contains", {"4de92dde-4b40-44ee-bde7-276d6bfb6b12"});
  EXPECT_EQ(grade(uuid, ": 4DE92DDE-4B40-44EE-BDE7-276D6BFB6B12."), 1.0);
  EXPECT_EQ(grade(uuid, " 4de92dde-4b40-44ee-bde7-276d6bfb6b13"), 0.0);
  EXPECT_EQ(grade(uuid, " 4de92dde-4b40-44ee"), 0.0);
}

TEST(Graders, ContainsAcceptsAnyAcceptedAnswer) {
  const Instance in = with("contains", {"Kessamoor", "the town of Kessamoor"});
  EXPECT_EQ(grade(in, "kessamoor"), 1.0);
}

TEST(Graders, NumericTakesTheFirstNumber) {
  const Instance in = with("numeric", {"71432"});
  EXPECT_EQ(grade(in, " 71432."), 1.0);
  EXPECT_EQ(grade(in, " 71,432. Remember it."), 1.0);
  EXPECT_EQ(grade(in, "**71432**"), 1.0);
  EXPECT_EQ(grade(in, " 71432.0"), 1.0);
  EXPECT_EQ(grade(in, " 71433, or maybe 71432"), 0.0);  // the first number decides
  EXPECT_EQ(grade(in, " 714320"), 0.0);
  EXPECT_EQ(grade(in, " 7143"), 0.0);
  EXPECT_EQ(grade(in, " the pass key."), 0.0);
  EXPECT_EQ(grade(in, " abc71432"), 0.0);  // glued to letters: not a number on its own
  EXPECT_EQ(grade(with("numeric", {"3.5"}), "3.50 kg"), 1.0);
}

TEST(Graders, ExactUsesTheFirstLine) {
  const Instance in = with("exact", {"Kessamoor"});
  EXPECT_EQ(grade(in, " Kessamoor."), 1.0);
  EXPECT_EQ(grade(in, "\n  kessamoor!\nBecause the text says so."), 1.0);
  EXPECT_EQ(grade(in, " The Kessamoor"), 1.0);  // a leading article is ignored
  EXPECT_EQ(grade(in, " Kessamoor, a town"), 0.0);
  EXPECT_EQ(grade(in, ""), 0.0);
}

TEST(Graders, AllValuesGivesTheFractionFound) {
  const Instance in = with("all_values", {"1111111", "2222222", "3333333", "4444444"});
  EXPECT_EQ(grade(in, " 1111111, 2222222, 3333333, and 4444444."), 1.0);
  EXPECT_EQ(grade(in, " 4444444, 3333333, 2222222, 1111111"), 1.0);  // any order
  EXPECT_EQ(grade(in, " 1111111, 2222222."), 0.5);
  EXPECT_EQ(grade(in, " 1111111, 1111111, 1111111, 1111111"), 0.25);  // repeats count once
  EXPECT_EQ(grade(in, " 11111112222222"), 0.0);
}

TEST(Graders, PerQueryCreditsEachQuery) {
  Instance in = with("per_query", {"1111111", "2222222", "3333333"});
  in.extra["queries"] = {{{"key", "a"}, {"values", {"1111111"}}},
                         {{"key", "b"}, {"values", {"2222222", "3333333"}}}};
  EXPECT_EQ(grade(in, "1111111, 2222222 and 3333333"), 1.0);
  EXPECT_EQ(grade(in, "1111111"), 0.5);
  EXPECT_EQ(grade(in, "2222222"), 0.25);  // half of query b
  EXPECT_EQ(grade(in, "nothing"), 0.0);
  in.extra.erase("queries");  // without queries: the fraction of all values
  EXPECT_NEAR(grade(in, "2222222"), 1.0 / 3.0, 1e-12);
}

TEST(Graders, PerplexityAndUnknownGradersAreErrors) {
  Instance ppl = with("perplexity", {});
  ppl.id = "ppl-L1000";
  ppl.task = "ppl";
  try {
    grade(ppl, "x");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("scored by perplexity"), std::string::npos) << e.what();
  }
  try {
    grade(with("fuzzy", {"a"}), "a");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown grader 'fuzzy'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvbench
