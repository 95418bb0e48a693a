// ScenarioStore on real files in a fresh temporary directory: the file's
// bytes, sets that survive a restart or come back after eviction, sets over
// the memory bound kept on disk only, concurrent puts of one set, and the
// temporary files of writes a crash cut short.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "server/store/scenario_store.h"
#include "tests/store/scenario_store_test_util.h"

namespace pricer {
namespace {

using ::testing::HasSubstr;

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

// A temporary file whose writer is gone is removed; one whose writer runs
// (this process), other names and stored sets are left alone.
TEST_F(ScenarioStoreTest, TemporaryFilesOfWritersThatAreGoneAreRemoved) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);  // `child` is a pid no process has now
  ScenarioStore store(1 << 20, dir_);
  ASSERT_TRUE(store.Put(2, 3, Matrix(2, 3)).ok());
  const std::string id(64, 'a');
  const std::string torn = id + ".set.tmp." + std::to_string(child) + ".0";
  const std::string running = id + ".set.tmp." + std::to_string(getpid()) + ".1";
  for (const std::string& name : {torn, running, std::string("notes.tmp.1.2")}) {
    std::ofstream(dir_ + "/" + name) << "PRSET001 half a set";
  }
  EXPECT_EQ(store.RemoveTornWrites(), 1);
  std::vector<std::string> want = {ScenarioStore::IdOf(2, 3, Matrix(2, 3)) + ".set", running,
                                   "notes.tmp.1.2"};
  std::sort(want.begin(), want.end());
  std::vector<std::string> files = Files();
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, want);
  EXPECT_EQ(store.RemoveTornWrites(), 0);
}

}  // namespace
}  // namespace pricer
