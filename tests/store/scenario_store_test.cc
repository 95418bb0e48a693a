// ScenarioStore on real files in a fresh temporary directory: the id is the
// SHA-256 of the documented bytes, the least recently used set leaves memory
// first, sets survive a restart, and damaged or unknown sets are refused.
#include "server/store/scenario_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <stdlib.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace pricer {
namespace {

using ::testing::HasSubstr;

// A deterministic rows x columns matrix; `salt` makes different ones.
std::vector<float> Matrix(int64_t rows, int64_t columns, int salt = 0) {
  std::vector<float> values(static_cast<size_t>(rows * columns));
  for (size_t k = 0; k < values.size(); ++k) {
    values[k] = static_cast<float>(k % 1000) * 0.25f - 3.0f + static_cast<float>(salt);
  }
  return values;
}

void AppendLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int b = 0; b < bytes; ++b) out->push_back(static_cast<char>((value >> (8 * b)) & 0xff));
}

// SHA-256 over rows, columns (int64, little-endian) and the float32 values
// (little-endian), as lowercase hex, built here byte by byte.
std::string ExpectedId(int64_t rows, int64_t columns, const std::vector<float>& values) {
  std::string buffer;
  AppendLittleEndian(static_cast<uint64_t>(rows), 8, &buffer);
  AppendLittleEndian(static_cast<uint64_t>(columns), 8, &buffer);
  for (float v : values) AppendLittleEndian(std::bit_cast<uint32_t>(v), 4, &buffer);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EXPECT_EQ(EVP_Digest(buffer.data(), buffer.size(), digest, &size, EVP_sha256(), nullptr), 1);
  EXPECT_EQ(size, 32u);
  std::string hex;
  for (unsigned int k = 0; k < size; ++k) {
    char two[3];
    std::snprintf(two, sizeof(two), "%02x", digest[k]);
    hex += two;
  }
  return hex;
}

// Columns [0, columns) of a stored set, column-major.
std::vector<float> Values(const ScenarioMatrix& matrix) {
  std::vector<float> out(static_cast<size_t>(matrix.rows() * matrix.columns()));
  matrix.CopyColumns(0, matrix.columns(), out.data());
  return out;
}

// A fresh directory, removed with everything in it at the end of the test.
class ScenarioStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "scenario_store_XXXXXX");
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The names of the files in the directory.
  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string PathOf(const std::string& id) const { return dir_ + "/" + id + ".set"; }

  // Flips the bits of the byte at `offset` of a set's file.
  void FlipByte(const std::string& id, std::streamoff offset) const {
    std::fstream file(PathOf(id), std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file.is_open());
    file.seekg(offset);
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(~byte);
    file.seekp(offset);
    file.write(&byte, 1);
    ASSERT_TRUE(file.good());
  }

  std::string dir_;
};

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

TEST_F(ScenarioStoreTest, FileHoldsMagicShapeAndValuesAndNoTemporaryIsLeft) {
  ScenarioStore store(1 << 20, dir_);
  const std::vector<float> a = Matrix(5, 3);
  absl::StatusOr<StoredSet> stored = store.Put(5, 3, a);
  ASSERT_TRUE(stored.ok()) << stored.status();
  absl::StatusOr<StoredSet> other = store.Put(3, 5, a);
  ASSERT_TRUE(other.ok()) << other.status();
  std::vector<std::string> expected = {stored->id + ".set", other->id + ".set"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(Files(), expected);

  std::ifstream in(PathOf(stored->id), std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string want = "PRSET001";
  AppendLittleEndian(5, 8, &want);
  AppendLittleEndian(3, 8, &want);
  for (float v : a) AppendLittleEndian(std::bit_cast<uint32_t>(v), 4, &want);
  EXPECT_EQ(file.size(), 8u + 16u + 60u);
  EXPECT_EQ(file, want);
}

TEST_F(ScenarioStoreTest, SecondStoreOnTheSameDirectoryFindsTheSet) {
  const std::vector<float> a = Matrix(6, 11, 4);
  std::string id;
  {
    ScenarioStore first(1 << 20, dir_);
    absl::StatusOr<StoredSet> stored = first.Put(6, 11, a);
    ASSERT_TRUE(stored.ok()) << stored.status();
    id = stored->id;
  }
  ScenarioStore restarted(1 << 20, dir_);
  EXPECT_EQ(restarted.bytes_in_memory(), 0);
  absl::StatusOr<ScenarioMatrix> got = restarted.Get(id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->rows(), 6);
  EXPECT_EQ(got->columns(), 11);
  EXPECT_EQ(Values(*got), a);
  EXPECT_EQ(restarted.bytes_in_memory(), 6 * 11 * 4);
  // Uploading it again after the restart finds it on disk.
  absl::StatusOr<StoredSet> again = restarted.Put(6, 11, a);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->existed);
  EXPECT_EQ(again->id, id);
  EXPECT_EQ(restarted.bytes_in_memory(), 6 * 11 * 4);
}

TEST_F(ScenarioStoreTest, PutAfterRestartFindsTheFileWithoutGet) {
  const std::vector<float> a = Matrix(2, 2);
  {
    ScenarioStore first(1 << 20, dir_);
    ASSERT_TRUE(first.Put(2, 2, a).ok());
  }
  ScenarioStore restarted(1 << 20, dir_);
  absl::StatusOr<StoredSet> again = restarted.Put(2, 2, a);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->existed);
  EXPECT_EQ(restarted.bytes_in_memory(), 16);
  EXPECT_EQ(Files(), std::vector<std::string>{again->id + ".set"});
}

TEST_F(ScenarioStoreTest, EvictedSetIsReloadedFromDisk) {
  ScenarioStore store(320, dir_);
  absl::StatusOr<StoredSet> a = store.Put(4, 10, Matrix(4, 10, 1));
  absl::StatusOr<StoredSet> b = store.Put(4, 10, Matrix(4, 10, 2));
  absl::StatusOr<StoredSet> c = store.Put(4, 10, Matrix(4, 10, 3));  // evicts a from memory
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(store.bytes_in_memory(), 320);
  EXPECT_EQ(Files().size(), 3u);
  absl::StatusOr<ScenarioMatrix> reloaded = store.Get(a->id);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_EQ(Values(*reloaded), Matrix(4, 10, 1));
  EXPECT_EQ(store.bytes_in_memory(), 320);  // a is back, b left
  absl::StatusOr<ScenarioMatrix> also = store.Get(b->id);
  ASSERT_TRUE(also.ok()) << also.status();
  EXPECT_EQ(Values(*also), Matrix(4, 10, 2));
  // Put of an evicted set finds its file.
  absl::StatusOr<StoredSet> again = store.Put(4, 10, Matrix(4, 10, 3));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->existed);
}

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

TEST_F(ScenarioStoreTest, SetOverTheMemoryBoundWithDirectoryIsOnDiskOnly) {
  ScenarioStore store(100, dir_);
  const std::vector<float> big = Matrix(5, 6);  // 120 bytes
  absl::StatusOr<StoredSet> stored = store.Put(5, 6, big);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->bytes, 120);
  EXPECT_EQ(store.bytes_in_memory(), 0);
  EXPECT_EQ(Files(), std::vector<std::string>{stored->id + ".set"});
  absl::StatusOr<ScenarioMatrix> got = store.Get(stored->id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Values(*got), big);
  EXPECT_EQ(store.bytes_in_memory(), 0);
  absl::StatusOr<StoredSet> again = store.Put(5, 6, big);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->existed);
  EXPECT_EQ(store.bytes_in_memory(), 0);
}

TEST_F(ScenarioStoreTest, ConcurrentPutsOfTheSameSetAllSucceed) {
  // Several uploads of the same matrix at once (clients sharing a file): each
  // is stored or found, and one complete file is left.
  ScenarioStore store(1, dir_);                    // disk only: every Put writes or finds the file
  const std::vector<float> a = Matrix(64, 32768);  // 8 MiB
  constexpr int kThreads = 4;
  for (int round = 0; round < 3; ++round) {
    std::vector<absl::Status> statuses(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] { statuses[t] = store.Put(64, 32768, a).status(); });
    }
    for (std::thread& thread : threads) thread.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(statuses[t].ok()) << statuses[t];
    const std::string id = ExpectedId(64, 32768, a);
    EXPECT_EQ(Files(), std::vector<std::string>{id + ".set"});
    absl::StatusOr<ScenarioMatrix> got = store.Get(id);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(Values(*got), a);
    std::filesystem::remove(PathOf(id));
  }
}

}  // namespace
}  // namespace pricer
