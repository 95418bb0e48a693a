// ScenarioStore with damaged files: a flipped value, header or shape and a
// truncated file are data loss, and uploading the set again repairs it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "server/store/scenario_store.h"
#include "tests/store/scenario_store_test_util.h"

namespace pricer {
namespace {

using ::testing::HasSubstr;

TEST_F(ScenarioStoreTest, DamagedValueInTheFileIsDataLoss) {
  std::string id;
  {
    ScenarioStore first(1 << 20, dir_);
    absl::StatusOr<StoredSet> stored = first.Put(5, 8, Matrix(5, 8));
    ASSERT_TRUE(stored.ok()) << stored.status();
    id = stored->id;
  }
  FlipByte(id, 24 + 4 * 17 + 1);  // a byte of value 17
  ScenarioStore restarted(1 << 20, dir_);
  const absl::StatusOr<ScenarioMatrix> got = restarted.Get(id);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
  EXPECT_THAT(std::string(got.status().message()), HasSubstr(id));
  EXPECT_EQ(restarted.bytes_in_memory(), 0);
}

TEST_F(ScenarioStoreTest, UploadingADamagedSetAgainRepairsItsFile) {
  std::string id;
  {
    ScenarioStore first(1 << 20, dir_);
    absl::StatusOr<StoredSet> stored = first.Put(5, 8, Matrix(5, 8));
    ASSERT_TRUE(stored.ok()) << stored.status();
    id = stored->id;
  }
  FlipByte(id, 24 + 4 * 17 + 1);
  ScenarioStore restarted(1 << 20, dir_);
  absl::StatusOr<StoredSet> again = restarted.Put(5, 8, Matrix(5, 8));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->id, id);
  EXPECT_FALSE(again->existed);  // the damaged file did not count
  ScenarioStore later(1 << 20, dir_);
  const absl::StatusOr<ScenarioMatrix> got = later.Get(id);
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<float> column(5);
  got->CopyColumns(3, 1, column.data());
  const std::vector<float> expected = Matrix(5, 8);
  EXPECT_EQ(column, std::vector<float>(expected.begin() + 15, expected.begin() + 20));
}

TEST_F(ScenarioStoreTest, DamagedHeaderIsDataLoss) {
  std::string id;
  {
    ScenarioStore first(1 << 20, dir_);
    absl::StatusOr<StoredSet> stored = first.Put(5, 8, Matrix(5, 8));
    ASSERT_TRUE(stored.ok()) << stored.status();
    id = stored->id;
  }
  ScenarioStore restarted(1 << 20, dir_);
  FlipByte(id, 3);  // the magic
  EXPECT_EQ(restarted.Get(id).status().code(), absl::StatusCode::kDataLoss);
  FlipByte(id, 3);
  ASSERT_TRUE(restarted.Get(id).ok());  // undamaged again (and now in memory)

  ScenarioStore other(1 << 20, dir_);
  FlipByte(id, 8 + 6);   // the high bytes of rows: a shape far beyond the file
  FlipByte(id, 16 + 5);  // and of columns
  const absl::StatusOr<ScenarioMatrix> got = other.Get(id);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
}

TEST_F(ScenarioStoreTest, TruncatedFileIsDataLoss) {
  std::string id;
  {
    ScenarioStore first(1 << 20, dir_);
    absl::StatusOr<StoredSet> stored = first.Put(5, 8, Matrix(5, 8));
    ASSERT_TRUE(stored.ok()) << stored.status();
    id = stored->id;
  }
  std::filesystem::resize_file(PathOf(id), 24 + 4 * 39);
  ScenarioStore restarted(1 << 20, dir_);
  EXPECT_EQ(restarted.Get(id).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace pricer
