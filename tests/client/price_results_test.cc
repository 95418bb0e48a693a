#include "client/lib/price_results.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

  const std::string csv_ =
      (std::filesystem::temp_directory_path() / "price_results_test_stats.csv").string();
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

}  // namespace
}  // namespace pricer
