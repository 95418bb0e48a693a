#include "client/lib/price_results.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/lib/run_report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pricer {
namespace {

using ::testing::HasSubstr;

std::vector<StatisticItem> Columns(absl::string_view list, bool errors) {
  absl::StatusOr<std::vector<StatisticItem>> items = ParseStatisticsList(list);
  EXPECT_TRUE(items.ok()) << items.status();
  return errors ? WithErrors(*items) : *items;
}

ReceivedReply Accepted(int64_t begin, int64_t end) {
  ReceivedReply reply;
  v1::JobAccepted* accepted = reply.message.mutable_accepted();
  accepted->set_paths(1000);
  accepted->set_issuers(3);
  accepted->set_column_begin(begin);
  accepted->set_column_end(end);
  return reply;
}

void Set(google::protobuf::RepeatedField<double>* field, std::vector<double> values) {
  field->Assign(values.begin(), values.end());
}

// A chunk of columns [4, 6) with mean and var:0.99, and their errors when
// `errors`.
ReceivedReply Chunk(bool errors) {
  ReceivedReply reply;
  v1::ResultChunk* chunk = reply.message.mutable_chunk();
  chunk->set_column_begin(4);
  chunk->set_column_end(6);
  chunk->set_rows(1000);
  v1::ColumnStatistics* s = chunk->mutable_statistics();
  Set(s->mutable_v0(), {100, 200});
  Set(s->mutable_mean(), {101.5, 0.1});
  v1::LevelValues* var = s->add_var();
  var->set_level(0.99);
  Set(var->mutable_values(), {30, 1e-300});
  if (errors) {
    Set(s->mutable_mean_standard_error(), {0.25, 1.0 / 3});
    Set(var->mutable_lower(), {28, 0});
    Set(var->mutable_upper(), {33.5, 2e-300});
  }
  return reply;
}

std::string ReadFile(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

class PriceResultsTest : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(csv_); }

  // One file per test: ctest runs this binary's tests in parallel processes.
  const std::string csv_ =
      (std::filesystem::temp_directory_path() /
       (std::string("price_results_test_") +
        ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".csv"))
          .string();
};

// Each statistic followed by its errors, each value the shortest decimal
// that reads back as the same double.
TEST_F(PriceResultsTest, WritesTheErrorsAfterTheirStatistic) {
  PriceResults results(ResultFiles{csv_, "", ""}, Columns("mean,var:0.99", true));
  ASSERT_TRUE(results.OnReply(Accepted(4, 6)).ok());
  const grpc::Status chunk = results.OnReply(Chunk(true));
  ASSERT_TRUE(chunk.ok()) << chunk.error_message();
  ASSERT_TRUE(results.Finish().ok());
  EXPECT_EQ(ReadFile(csv_),
            "column,v0,mean,mean_se,var_0.99,var_0.99_lo,var_0.99_hi\n"
            "4,100,101.5,0.25,30,28,33.5\n"
            "5,200,0.1,0.3333333333333333,1e-300,0,2e-300\n");
  EXPECT_THAT(results.StatisticsTable(), HasSubstr("mean_se"));
}

TEST_F(PriceResultsTest, WithoutErrorsTheColumnsAreTheStatistics) {
  PriceResults results(ResultFiles{csv_, "", ""}, Columns("mean,var:0.99", false));
  ASSERT_TRUE(results.OnReply(Accepted(4, 6)).ok());
  ASSERT_TRUE(results.OnReply(Chunk(true)).ok());  // errors not asked for: ignored
  ASSERT_TRUE(results.Finish().ok());
  EXPECT_EQ(ReadFile(csv_),
            "column,v0,mean,var_0.99\n"
            "4,100,101.5,30\n"
            "5,200,0.1,1e-300\n");
}

TEST_F(PriceResultsTest, ARestoredChunkBringsItsErrors) {
  PriceResults results(ResultFiles{csv_, "", ""}, Columns("mean,var:0.99", true));
  results.ExpectColumns(4, 6);
  results.ReopenFiles();
  ASSERT_TRUE(results.Restore(Accepted(4, 6).message).ok());
  ASSERT_TRUE(results.Restore(Chunk(true).message).ok());
  ASSERT_TRUE(results.Finish().ok());
  EXPECT_THAT(ReadFile(csv_), HasSubstr("5,200,0.1,0.3333333333333333,1e-300,0,2e-300\n"));
  EXPECT_EQ(results.totals().columns_from_journal, 2);
}

// A server that ignores StatisticsSelection.errors (or loses an array)
// contradicts the request.
TEST_F(PriceResultsTest, RefusesAReplyWithoutTheErrorsAskedFor) {
  PriceResults results(ResultFiles{csv_, "", ""}, Columns("mean,var:0.99", true));
  ASSERT_TRUE(results.OnReply(Accepted(4, 6)).ok());
  grpc::Status status = results.OnReply(Chunk(false));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(status.error_message(), "the server sent no mean_se for 2 columns");

  ReceivedReply short_upper = Chunk(true);
  short_upper.message.mutable_chunk()->mutable_statistics()->mutable_var(0)->mutable_upper()->Add(
      1);
  status = results.OnReply(short_upper);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(status.error_message(), "the server sent no var_0.99_hi for 2 columns");
}

// var:0.99 within 2%, up to 4,000 paths, of the chunks' 1,000.
v1::PrecisionTarget VarTarget() {
  v1::PrecisionTarget target;
  target.set_statistic(v1::PrecisionTarget::STATISTIC_VAR);
  target.set_level(0.99);
  target.set_relative(0.02);
  target.set_max_paths(4000);
  return target;
}

// Chunk(true) at columns [begin, begin + 2), priced with `rows` paths.
ReceivedReply TargetedChunk(int64_t begin, int64_t rows, std::vector<bool> met) {
  ReceivedReply reply = Chunk(true);
  v1::ResultChunk* chunk = reply.message.mutable_chunk();
  chunk->set_column_begin(begin);
  chunk->set_column_end(begin + 2);
  chunk->set_rows(rows);
  chunk->mutable_statistics()->mutable_target_met()->Assign(met.begin(), met.end());
  return reply;
}

ReceivedReply Round(int round, int64_t paths) {
  ReceivedReply reply;
  reply.message.mutable_round()->set_round(round);
  reply.message.mutable_round()->set_paths(paths);
  return reply;
}

// Columns out of order, each with the paths it took: the CSV ends with
// them and whether the column met the target.
TEST_F(PriceResultsTest, WithATargetEachColumnHasItsPaths) {
  PriceResults results(ResultFiles{csv_, "", ""}, Columns("mean,var:0.99", true), VarTarget());
  ASSERT_TRUE(results.OnReply(Accepted(4, 10)).ok());
  ASSERT_TRUE(results.OnReply(Round(0, 1000)).ok());
  EXPECT_EQ(results.totals().round, 0);
  ASSERT_TRUE(results.OnReply(TargetedChunk(6, 1000, {true, true})).ok());
  ASSERT_TRUE(results.OnReply(Round(1, 2000)).ok());
  const RunProgress progress = results.progress();
  EXPECT_EQ(progress.columns, 6);
  EXPECT_EQ(progress.columns_done, 2);
  EXPECT_EQ(progress.columns_priced, 2);
  EXPECT_EQ(progress.round, 1);
  EXPECT_EQ(progress.round_paths, 2000);
  ASSERT_TRUE(results.OnReply(TargetedChunk(8, 2000, {true, true})).ok());
  ASSERT_TRUE(results.OnReply(Round(2, 4000)).ok());
  const grpc::Status last = results.OnReply(TargetedChunk(4, 4000, {true, false}));
  ASSERT_TRUE(last.ok()) << last.error_message();
  ASSERT_TRUE(results.Finish().ok());
  EXPECT_EQ(ReadFile(csv_),
            "column,v0,mean,mean_se,var_0.99,var_0.99_lo,var_0.99_hi,paths,target_met\n"
            "4,100,101.5,0.25,30,28,33.5,4000,1\n"
            "5,200,0.1,0.3333333333333333,1e-300,0,2e-300,4000,0\n"
            "6,100,101.5,0.25,30,28,33.5,1000,1\n"
            "7,200,0.1,0.3333333333333333,1e-300,0,2e-300,1000,1\n"
            "8,100,101.5,0.25,30,28,33.5,2000,1\n"
            "9,200,0.1,0.3333333333333333,1e-300,0,2e-300,2000,1\n");
  const RunTotals totals = results.totals();
  EXPECT_EQ(totals.target, "var_0.99 <= 2%");
  EXPECT_EQ(totals.columns_met, 5);
  EXPECT_EQ(totals.columns_by_paths, (std::map<int64_t, int64_t>{{1000, 2}, {2000, 2}, {4000, 2}}));
  EXPECT_EQ(totals.round, 2);
  EXPECT_EQ(totals.round_paths, 4000);
  // Every round counted: 1,000, 1,000 + 2,000, 1,000 + 2,000 + 4,000.
  EXPECT_EQ(totals.path_columns, 2 * (1000 + 3000 + 7000));
  EXPECT_THAT(results.StatisticsTable(),
              HasSubstr("statistics over 1000 to 4000 paths per column ("));
}

TEST_F(PriceResultsTest, ARestoredTargetedChunkKeepsItsPaths) {
  PriceResults results(ResultFiles{csv_, "", ""}, Columns("var:0.99", true), VarTarget());
  results.ExpectColumns(4, 6);
  results.ReopenFiles();
  ASSERT_TRUE(results.Restore(Accepted(4, 6).message).ok());
  ASSERT_TRUE(results.Restore(TargetedChunk(4, 2000, {false, true}).message).ok());
  ASSERT_TRUE(results.Finish().ok());
  EXPECT_THAT(ReadFile(csv_),
              HasSubstr("\n4,100,30,28,33.5,2000,0\n5,200,1e-300,0,2e-300,2000,1\n"));
  EXPECT_EQ(results.totals().columns_met, 1);
  EXPECT_EQ(results.totals().path_columns, 0);  // none priced by this run
  EXPECT_EQ(results.progress().columns_done, 2);
  EXPECT_EQ(results.progress().columns_priced, 0);
}

// The run's flops count every round of a targeted column: 2 N (P + 2P) for
// each of two columns of 2P, 2 N P for the two of P, and nothing for the
// two restored from the journal.
TEST_F(PriceResultsTest, RunFlopsCountEveryRoundOfEveryColumnPriced) {
  PriceResults results(ResultFiles{}, Columns("var:0.99", true), VarTarget());
  results.ExpectColumns(4, 10);
  ASSERT_TRUE(results.Restore(Accepted(4, 6).message).ok());
  ASSERT_TRUE(results.Restore(TargetedChunk(4, 4000, {true, true}).message).ok());
  ASSERT_TRUE(results.OnReply(Accepted(6, 10)).ok());
  ASSERT_TRUE(results.OnReply(Round(0, 1000)).ok());
  ASSERT_TRUE(results.OnReply(TargetedChunk(8, 1000, {true, true})).ok());
  ASSERT_TRUE(results.OnReply(Round(1, 2000)).ok());
  ASSERT_TRUE(results.OnReply(TargetedChunk(6, 2000, {true, false})).ok());
  EXPECT_EQ(RunFlops(results.totals()), 2.0 * 3 * (2 * (1000 + 2000) + 2 * 1000));
}

// Paths that are not P * 2^k up to the maximum, a round that is not the
// request's, target_met missing; and without a target, rows other than P.
TEST_F(PriceResultsTest, RefusesPathsTheTargetCannotHave) {
  PriceResults results(ResultFiles{csv_, "", ""}, Columns("var:0.99", true), VarTarget());
  ASSERT_TRUE(results.OnReply(Accepted(4, 10)).ok());
  for (const int64_t rows : {3000, 8000, 500}) {
    const grpc::Status status = results.OnReply(TargetedChunk(4, rows, {true, true}));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL) << rows;
    EXPECT_EQ(status.error_message(),
              absl::StrCat("the server sent a chunk of columns [4, 6) of ", rows,
                           " rows for 1000 paths (not 1000 x 2^k <= 4000)"));
  }
  EXPECT_EQ(results.OnReply(TargetedChunk(4, 1000, {true})).error_message(),
            "the server sent no target_met for 2 columns");
  EXPECT_EQ(results.OnReply(Round(1, 3000)).error_message(),
            "the server sent a round 1 of 3000 paths that the request does not have");
  EXPECT_FALSE(results.OnReply(Round(3, 8000)).ok());

  PriceResults plain(ResultFiles{csv_, "", ""}, Columns("var:0.99", true));
  ASSERT_TRUE(plain.OnReply(Accepted(4, 10)).ok());
  EXPECT_EQ(plain.OnReply(TargetedChunk(4, 2000, {true, true})).error_message(),
            "the server sent a chunk of columns [4, 6) of 2000 rows for 1000 paths");
  EXPECT_FALSE(plain.OnReply(Round(0, 1000)).ok());
}

}  // namespace
}  // namespace pricer
