// policies/query_window.h: the recent queries of each layer, oldest first,
// dropped on a new sequence; take_newest keeps the newest that fit; save and
// load round-trip and refuse a window of another shape.
#include <gtest/gtest.h>

#include "policies/query_window.h"
#include "tests/support/state_round_trip.h"

namespace kvbench {
namespace {

// Query i of a push: every element i + 0.5 (query_dim 2).
void push(QueryWindow& w, int layer, std::vector<int32_t> positions) {
  std::vector<float> q;
  for (int32_t p : positions) q.insert(q.end(), {p + 0.5f, p + 0.5f});
  w.push(layer, q.data(), positions);
}

TEST(QueryWindow, KeepsTheNewestOldestFirst) {
  QueryWindow w(2, 3, 2);
  w.begin(0);
  EXPECT_EQ(w.last(0), nullptr);
  push(w, 0, {0, 1});
  push(w, 0, {2, 3, 4, 5});  // more than the capacity: only 3, 4, 5 stay
  ASSERT_EQ(w.count(0), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(w.position(0, i), 3 + i);
    EXPECT_EQ(w.query(0, i)[1], 3 + i + 0.5f);
  }
  EXPECT_EQ(w.last(0)[0], 5.5f);
  EXPECT_EQ(w.count(1), 0);
  w.begin(0);  // the same sequence keeps its queries
  EXPECT_EQ(w.count(0), 3);
  w.begin(1);  // another drops them
  EXPECT_EQ(w.count(0), 0);
  EXPECT_EQ(w.seq(), 1);
  EXPECT_EQ(w.bytes(), 2u * (3 * 2 * 4 + 3 * 4));
}

TEST(QueryWindow, TakeNewestFitsTheSmallerWindow) {
  QueryWindow big(1, 4, 2), small(1, 2, 2);
  big.begin(5);
  push(big, 0, {10, 11, 12});
  small.take_newest(big);
  ASSERT_EQ(small.count(0), 2);
  EXPECT_EQ(small.position(0, 0), 11);
  EXPECT_EQ(small.position(0, 1), 12);
  EXPECT_EQ(small.seq(), 5);
}

TEST(QueryWindow, SaveLoadRoundTripsAndChecksTheShape) {
  QueryWindow w(2, 3, 2);
  w.begin(2);
  push(w, 0, {0, 1, 2, 3});
  push(w, 1, {7});
  const std::string bytes = test::saved_bytes([&](StateWriter& out) { w.save(out); });
  {
    test::PayloadReader p(bytes);
    QueryWindow back(2, 3, 2);
    back.load(p.reader, 64);
    EXPECT_EQ(back.seq(), 2);
    ASSERT_EQ(back.count(0), 3);
    EXPECT_EQ(back.position(0, 0), 1);
    EXPECT_EQ(back.last(1)[0], 7.5f);
  }
  {
    test::PayloadReader p(bytes);
    QueryWindow other(2, 4, 2);  // another capacity
    EXPECT_THROW(other.load(p.reader, 64), InputError);
  }
  {
    test::PayloadReader p(bytes);
    QueryWindow back(2, 3, 2);
    EXPECT_THROW(back.load(p.reader, 2), InputError);  // sequence 2 of at most 2
  }
}

}  // namespace
}  // namespace kvbench
