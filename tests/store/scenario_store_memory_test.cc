// ScenarioStore in memory: the id is the SHA-256 of the documented bytes, a
// set is stored once, the least recently used set leaves memory first,
// unknown ids are not found, and a set over the bound without a directory is
// refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/store/scenario_store.h"
#include "tests/store/scenario_store_test_util.h"

namespace pricer {
namespace {

using ::testing::HasSubstr;

TEST_F(ScenarioStoreTest, IdIsSha256OfShapeAndValues) {
  ScenarioStore store(1 << 20, "");
  const std::vector<float> a = Matrix(3, 5);
  absl::StatusOr<StoredSet> stored = store.Put(3, 5, a);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->id, ExpectedId(3, 5, a));
  EXPECT_THAT(stored->id, ::testing::MatchesRegex("[0-9a-f]{64}"));
  EXPECT_EQ(ScenarioStore::IdOf(3, 5, a), stored->id);
  EXPECT_EQ(stored->rows, 3);
  EXPECT_EQ(stored->columns, 5);
  EXPECT_EQ(stored->bytes, 60);
  EXPECT_FALSE(stored->existed);
  EXPECT_EQ(store.bytes_in_memory(), 60);
}

TEST_F(ScenarioStoreTest, SameMatrixTwiceIsStoredOnce) {
  ScenarioStore store(1 << 20, "");
  const std::vector<float> a = Matrix(4, 6);
  absl::StatusOr<StoredSet> first = store.Put(4, 6, a);
  ASSERT_TRUE(first.ok()) << first.status();
  const int64_t bytes = store.bytes_in_memory();
  EXPECT_EQ(bytes, 96);
  absl::StatusOr<StoredSet> second = store.Put(4, 6, a);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->id, first->id);
  EXPECT_TRUE(second->existed);
  EXPECT_EQ(second->bytes, 96);
  EXPECT_EQ(store.bytes_in_memory(), bytes);
}

TEST_F(ScenarioStoreTest, DifferentShapeWithTheSameFloatsHasADifferentId) {
  ScenarioStore store(1 << 20, "");
  const std::vector<float> a = Matrix(4, 6);
  absl::StatusOr<StoredSet> tall = store.Put(4, 6, a);
  absl::StatusOr<StoredSet> wide = store.Put(6, 4, a);
  ASSERT_TRUE(tall.ok() && wide.ok());
  EXPECT_NE(tall->id, wide->id);
  EXPECT_EQ(wide->id, ExpectedId(6, 4, a));
  EXPECT_FALSE(wide->existed);
  EXPECT_EQ(store.bytes_in_memory(), 2 * 96);
  absl::StatusOr<ScenarioMatrix> got = store.Get(wide->id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->rows(), 6);
  EXPECT_EQ(got->columns(), 4);
}

TEST_F(ScenarioStoreTest, GetReturnsTheStoredValues) {
  ScenarioStore store(1 << 20, "");
  const std::vector<float> a = Matrix(7, 9, 2);
  absl::StatusOr<StoredSet> stored = store.Put(7, 9, a);
  ASSERT_TRUE(stored.ok()) << stored.status();
  absl::StatusOr<ScenarioMatrix> got = store.Get(stored->id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->generated());
  EXPECT_EQ(got->rows(), 7);
  EXPECT_EQ(got->columns(), 9);
  EXPECT_EQ(Values(*got), a);
  // One column from the middle.
  std::vector<float> column(7);
  got->CopyColumns(4, 1, column.data());
  EXPECT_EQ(column, std::vector<float>(a.begin() + 28, a.begin() + 35));
}

TEST_F(ScenarioStoreTest, LeastRecentlyUsedSetLeavesMemoryFirst) {
  // Each set is 4 x 10 float32 = 160 bytes; the bound holds two.
  ScenarioStore store(320, "");
  absl::StatusOr<StoredSet> a = store.Put(4, 10, Matrix(4, 10, 1));
  absl::StatusOr<StoredSet> b = store.Put(4, 10, Matrix(4, 10, 2));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(store.bytes_in_memory(), 320);
  // Touch a: b is now the least recently used.
  ASSERT_TRUE(store.Get(a->id).ok());
  absl::StatusOr<StoredSet> c = store.Put(4, 10, Matrix(4, 10, 3));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(store.bytes_in_memory(), 320);
  const absl::StatusOr<ScenarioMatrix> evicted = store.Get(b->id);
  EXPECT_EQ(evicted.status().code(), absl::StatusCode::kNotFound) << evicted.status();
  EXPECT_THAT(std::string(evicted.status().message()), HasSubstr(b->id));
  absl::StatusOr<ScenarioMatrix> kept = store.Get(a->id);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(Values(*kept), Matrix(4, 10, 1));
  absl::StatusOr<ScenarioMatrix> newest = store.Get(c->id);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(Values(*newest), Matrix(4, 10, 3));
  // Putting b again stores it anew (it was gone), and evicts a, now the oldest.
  absl::StatusOr<StoredSet> again = store.Put(4, 10, Matrix(4, 10, 2));
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->existed);
  EXPECT_EQ(store.Get(a->id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.bytes_in_memory(), 320);
}

TEST_F(ScenarioStoreTest, PuttingAStoredSetMakesItTheMostRecentlyUsed) {
  ScenarioStore store(320, "");
  absl::StatusOr<StoredSet> a = store.Put(4, 10, Matrix(4, 10, 1));
  absl::StatusOr<StoredSet> b = store.Put(4, 10, Matrix(4, 10, 2));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(store.Put(4, 10, Matrix(4, 10, 1)).ok());  // a again: b is the oldest
  ASSERT_TRUE(store.Put(4, 10, Matrix(4, 10, 3)).ok());
  EXPECT_TRUE(store.Get(a->id).ok());
  EXPECT_EQ(store.Get(b->id).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ScenarioStoreTest, UnknownIdIsNotFound) {
  const std::string unknown = ExpectedId(1, 1, {1.0f});
  for (const std::string& directory : {std::string(), dir_}) {
    ScenarioStore store(1 << 20, directory);
    ASSERT_TRUE(store.Put(2, 2, Matrix(2, 2)).ok());
    const absl::StatusOr<ScenarioMatrix> got = store.Get(unknown);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << directory;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(unknown));
    // Not an id at all: never a path outside the directory.
    EXPECT_EQ(store.Get("../" + unknown).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(store.Get("").status().code(), absl::StatusCode::kNotFound);
  }
}

TEST_F(ScenarioStoreTest, SetOverTheMemoryBoundWithoutDirectoryIsResourceExhausted) {
  ScenarioStore store(100, "");
  ASSERT_TRUE(store.Put(2, 2, Matrix(2, 2)).ok());  // 16 bytes
  const std::vector<float> big = Matrix(5, 6);      // 120 bytes
  const absl::StatusOr<StoredSet> refused = store.Put(5, 6, big);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("120"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("100"));
  EXPECT_EQ(store.bytes_in_memory(), 16);
  EXPECT_EQ(store.Get(ExpectedId(5, 6, big)).status().code(), absl::StatusCode::kNotFound);
  // Exactly the bound fits (and evicts the small set).
  ASSERT_TRUE(store.Put(5, 5, Matrix(5, 5)).ok());
  EXPECT_EQ(store.bytes_in_memory(), 100);
}

}  // namespace
}  // namespace pricer
