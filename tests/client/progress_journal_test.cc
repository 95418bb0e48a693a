#include "client/lib/progress_journal.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pricer {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed())))
      .string();
}

v1::PriceRequest Request(uint64_t seed) {
  v1::PriceRequest request;
  request.set_paths(100);
  request.set_seed(seed);
  request.mutable_scenarios()->mutable_generated()->set_columns(1000);
  return request;
}

v1::PriceReply Chunk(int64_t begin, int64_t end) {
  v1::PriceReply reply;
  v1::ResultChunk* chunk = reply.mutable_chunk();
  chunk->set_column_begin(begin);
  chunk->set_column_end(end);
  chunk->set_rows(2);
  chunk->set_values(std::string(static_cast<size_t>(8 * (end - begin)), 'x'));
  for (int64_t j = begin; j < end; ++j) {
    chunk->mutable_statistics()->add_mean(0.5 * static_cast<double>(j));
  }
  return reply;
}

TEST(ProgressJournal, FingerprintDependsOnTheRequestAndTheFiles) {
  const std::string a = ProgressJournal::Fingerprint(Request(1), {"sc.npy", ""});
  EXPECT_THAT(a, ::testing::MatchesRegex("[0-9a-f]{64}"));
  EXPECT_EQ(a, ProgressJournal::Fingerprint(Request(1), {"sc.npy", ""}));
  EXPECT_NE(a, ProgressJournal::Fingerprint(Request(2), {"sc.npy", ""}));
  EXPECT_NE(a, ProgressJournal::Fingerprint(Request(1), {"other.npy", ""}));
  EXPECT_NE(a, ProgressJournal::Fingerprint(Request(1), {"sc.np", "y"}));
}

TEST(ProgressJournal, ResumeReadsTheRecordsWithoutValues) {
  const std::string path = TempPath("journal.progress");
  const std::string fingerprint = ProgressJournal::Fingerprint(Request(1), {"sc.npy"});
  {
    absl::StatusOr<ProgressJournal> journal = ProgressJournal::Create(path, fingerprint);
    ASSERT_TRUE(journal.ok()) << journal.status();
    v1::PriceReply accepted;
    accepted.mutable_accepted()->set_column_end(1000);
    ASSERT_TRUE(journal->Append(accepted).ok());
    ASSERT_TRUE(journal->Append(Chunk(300, 310)).ok());
    ASSERT_TRUE(journal->Append(Chunk(0, 7)).ok());
    // No Remove: the run was interrupted.
  }
  std::vector<v1::PriceReply> records;
  absl::StatusOr<ProgressJournal> resumed = ProgressJournal::Resume(path, fingerprint, &records);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].accepted().column_end(), 1000);
  EXPECT_EQ(records[1].chunk().column_begin(), 300);
  EXPECT_EQ(records[1].chunk().column_end(), 310);
  EXPECT_TRUE(records[1].chunk().values().empty());
  ASSERT_EQ(records[1].chunk().statistics().mean_size(), 10);
  EXPECT_EQ(records[1].chunk().statistics().mean(9), 154.5);
  EXPECT_EQ(records[2].chunk().column_end(), 7);

  // Appending continues the same journal; Remove deletes it.
  ASSERT_TRUE(resumed->Append(Chunk(7, 9)).ok());
  absl::StatusOr<ProgressJournal> again = ProgressJournal::Resume(path, fingerprint, &records);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[3].chunk().column_begin(), 7);
  ASSERT_TRUE(again->Remove().ok());
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ProgressJournal, TornLastRecordIsDroppedAndOverwritten) {
  const std::string path = TempPath("torn.progress");
  const std::string fingerprint = ProgressJournal::Fingerprint(Request(1), {"stats.csv"});
  {
    absl::StatusOr<ProgressJournal> journal = ProgressJournal::Create(path, fingerprint);
    ASSERT_TRUE(journal.ok()) << journal.status();
    ASSERT_TRUE(journal->Append(Chunk(0, 4)).ok());
    ASSERT_TRUE(journal->Append(Chunk(4, 8)).ok());
  }
  // Cut the last record short, as a kill in the middle of a write would.
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 3);
  std::vector<v1::PriceReply> records;
  absl::StatusOr<ProgressJournal> resumed = ProgressJournal::Resume(path, fingerprint, &records);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].chunk().column_end(), 4);
  // The next record follows the last whole one.
  ASSERT_TRUE(resumed->Append(Chunk(8, 12)).ok());
  ASSERT_TRUE(ProgressJournal::Resume(path, fingerprint, &records).ok());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].chunk().column_begin(), 8);
  std::filesystem::remove(path);
}

TEST(ProgressJournal, AnotherFingerprintOrNoJournalIsRefusedNamingThePath) {
  const std::string path = TempPath("other.progress");
  ASSERT_TRUE(
      ProgressJournal::Create(path, ProgressJournal::Fingerprint(Request(1), {"a.npy"})).ok());
  std::vector<v1::PriceReply> records;
  absl::StatusOr<ProgressJournal> other =
      ProgressJournal::Resume(path, ProgressJournal::Fingerprint(Request(2), {"a.npy"}), &records);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.status().message(), HasSubstr(path));
  EXPECT_THAT(other.status().message(), HasSubstr("another request"));
  std::filesystem::remove(path);

  absl::StatusOr<ProgressJournal> none = ProgressJournal::Resume(path, "f", &records);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("no journal " + path));

  std::ofstream(path) << "something else\n";
  absl::StatusOr<ProgressJournal> foreign = ProgressJournal::Resume(path, "f", &records);
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(foreign.status().message(), HasSubstr("is not a pricer progress journal"));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pricer
