#include "client/lib/column_ranges.h"

#include <vector>

#include "gtest/gtest.h"

namespace pricer {
namespace {

using Ranges = std::vector<ColumnRange>;

TEST(ColumnRanges, EmptySetMissesEverything) {
  ColumnRanges r;
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.count(), 0);
  EXPECT_EQ(r.Missing(3, 9), (Ranges{{3, 9}}));
  EXPECT_EQ(r.Missing(5, 5), Ranges{});
  EXPECT_FALSE(r.Overlaps(0, 100));
  EXPECT_TRUE(r.Covers(4, 4));
}

TEST(ColumnRanges, MissingAreTheGapsInsideTheRange) {
  ColumnRanges r;
  r.Add(10, 20);
  r.Add(30, 40);
  EXPECT_EQ(r.count(), 20);
  EXPECT_EQ(r.Missing(0, 50), (Ranges{{0, 10}, {20, 30}, {40, 50}}));
  EXPECT_EQ(r.Missing(15, 35), (Ranges{{20, 30}}));
  EXPECT_EQ(r.Missing(12, 18), Ranges{});
  EXPECT_EQ(r.Missing(20, 30), (Ranges{{20, 30}}));
  EXPECT_EQ(r.Missing(25, 45), (Ranges{{25, 30}, {40, 45}}));
  EXPECT_TRUE(r.Covers(30, 40));
  EXPECT_FALSE(r.Covers(19, 21));
}

TEST(ColumnRanges, ChunksInAnyOrderMerge) {
  // Chunks of a split request arrive in whatever order shards finish.
  ColumnRanges r;
  r.Add(256, 512);
  r.Add(0, 128);
  r.Add(768, 1000);
  r.Add(128, 256);  // touches both neighbours
  EXPECT_EQ(r.count(), 744);
  EXPECT_EQ(r.Missing(0, 1000), (Ranges{{512, 768}}));
  r.Add(500, 800);  // overlaps both sides
  EXPECT_EQ(r.count(), 1000);
  EXPECT_TRUE(r.Covers(0, 1000));
  EXPECT_EQ(r.Missing(0, 1001), (Ranges{{1000, 1001}}));
  r.Add(3, 3);  // empty: nothing
  EXPECT_EQ(r.count(), 1000);
}

TEST(ColumnRanges, OverlapsOnlyWhenAColumnIsShared) {
  ColumnRanges r;
  r.Add(10, 20);
  EXPECT_TRUE(r.Overlaps(19, 25));
  EXPECT_TRUE(r.Overlaps(0, 11));
  EXPECT_TRUE(r.Overlaps(12, 13));
  EXPECT_TRUE(r.Overlaps(0, 100));
  EXPECT_FALSE(r.Overlaps(20, 30));  // half-open: 20 is not in the set
  EXPECT_FALSE(r.Overlaps(0, 10));
  EXPECT_FALSE(r.Overlaps(15, 15));
}

}  // namespace
}  // namespace pricer
