// UploadScenarios and pricing by set id against a real in-process server: a
// 200 MB set in 1 MiB chunks, pricing by id bitwise like the same matrix
// inline, unknown sets and sets of the wrong shape refused, the store's byte
// bound, and a restart on the same --scenario-dir.
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/lib/pricer_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/scenario_store.h"
#include "tests/service/service_test_util.h"
#include "tests/service/upload_test_util.h"

namespace pricer::testing {
namespace {

using ::testing::HasSubstr;

// The chunk and prices replies of a call, serialized, in column (issuer)
// order: two calls whose lists are equal sent the same bytes.
std::vector<std::string> SortedResults(const PriceCall& call) {
  std::vector<std::pair<std::pair<int, int64_t>, std::string>> keyed;
  for (const v1::PriceReply& reply : call.replies) {
    if (reply.has_chunk()) {
      keyed.push_back({{0, reply.chunk().column_begin()}, reply.chunk().SerializeAsString()});
    } else if (reply.has_prices()) {
      keyed.push_back({{1, reply.prices().issuer_begin()}, reply.prices().SerializeAsString()});
    }
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::string> out;
  for (auto& [key, bytes] : keyed) out.push_back(std::move(bytes));
  return out;
}

// Full output, terminal prices and every kind of statistic.
void RequestEverything(v1::PriceRequest* request) {
  v1::OutputOptions* output = request->mutable_output();
  output->set_full(true);
  output->set_terminal_prices(true);
  v1::StatisticsSelection* stats = output->mutable_statistics();
  stats->set_mean(true);
  stats->set_stddev(true);
  stats->set_min(true);
  stats->set_max(true);
  stats->add_quantiles(0.5);
  stats->add_var(0.99);
  stats->add_es(0.975);
  output->set_chunk_columns(64);
}

// Two calls' results are the same bytes, and both were accepted with the
// same sizes and plan.
void ExpectSameResults(const PriceCall& got, const PriceCall& want) {
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  ASSERT_TRUE(want.status.ok()) << want.status.error_message();
  ASSERT_TRUE(!got.replies.empty() && got.replies.front().has_accepted());
  ASSERT_TRUE(!want.replies.empty() && want.replies.front().has_accepted());
  v1::JobAccepted a = got.replies.front().accepted();
  v1::JobAccepted b = want.replies.front().accepted();
  a.clear_job_id();
  b.clear_job_id();
  EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString())
      << a.DebugString() << " vs " << b.DebugString();
  const std::vector<std::string> x = SortedResults(got), y = SortedResults(want);
  EXPECT_GT(x.size(), 1u);
  ASSERT_EQ(x.size(), y.size());
  for (size_t k = 0; k < x.size(); ++k) EXPECT_TRUE(x[k] == y[k]) << "result reply " << k;
}

// The statistics of columns [begin, end) of a call, column by column: every
// value the chunks' ColumnStatistics hold for it, in field order.
std::vector<std::vector<double>> StatisticsByColumn(const PriceCall& call, int64_t begin,
                                                    int64_t end) {
  std::vector<std::vector<double>> columns(static_cast<size_t>(end - begin));
  for (const v1::PriceReply& reply : call.replies) {
    if (!reply.has_chunk()) continue;
    const v1::ResultChunk& chunk = reply.chunk();
    const v1::ColumnStatistics& s = chunk.statistics();
    for (int64_t j = std::max(begin, chunk.column_begin()); j < std::min(end, chunk.column_end());
         ++j) {
      const int k = static_cast<int>(j - chunk.column_begin());
      std::vector<double>& column = columns[static_cast<size_t>(j - begin)];
      for (const auto* values : {&s.v0(), &s.mean(), &s.stddev(), &s.min(), &s.max()}) {
        if (k < values->size()) column.push_back(values->Get(k));
      }
      for (const auto* levels : {&s.quantiles(), &s.var(), &s.es()}) {
        for (const v1::LevelValues& level : *levels) {
          if (k < level.values_size()) column.push_back(level.values(k));
        }
      }
    }
  }
  return columns;
}

// Statistics of every column of the set `id` (`rows` x `columns`, values `a`)
// priced over `paths` paths, and the same statistics for a 20,480-column slice
// of it sent inline (41 MB, under the request limit). The slice starts on a
// 256-column block of A, so each of its blocks is the same GEMM as in the set:
// the values are bitwise the same.
void ExpectSetStatisticsLikeInlineSlice(v1::Pricer::Stub& stub, const std::string& id,
                                        const std::vector<float>& a, int64_t rows, int64_t columns,
                                        int64_t paths) {
  const int64_t first = 40'960, count = 20'480;
  v1::PriceRequest by_set = SetRequest(id, rows, paths);
  v1::StatisticsSelection* stats = by_set.mutable_output()->mutable_statistics();
  stats->set_mean(true);
  stats->set_stddev(true);
  stats->set_max(true);
  stats->add_var(0.99);
  stats->add_es(0.975);
  v1::PriceRequest by_value = by_set;
  const std::vector<float> slice(a.begin() + first * rows, a.begin() + (first + count) * rows);
  SetInlineMatrix(slice, rows, count, &by_value);
  const PriceCall set_call = RunPrice(stub, by_set);
  ASSERT_TRUE(set_call.status.ok()) << set_call.status.error_message();
  const PriceCall inline_call = RunPrice(stub, by_value);
  ASSERT_TRUE(inline_call.status.ok()) << inline_call.status.error_message();
  const std::vector<std::vector<double>> from_set = StatisticsByColumn(set_call, 0, columns);
  const std::vector<std::vector<double>> from_inline = StatisticsByColumn(inline_call, 0, count);
  for (int64_t j = 0; j < columns; ++j) {
    ASSERT_EQ(from_set[static_cast<size_t>(j)].size(), 6u) << "column " << j;
  }
  for (int64_t j = 0; j < count; ++j) {
    ASSERT_EQ(from_set[static_cast<size_t>(first + j)], from_inline[static_cast<size_t>(j)])
        << "column " << first + j << " of the set, " << j << " inline";
  }
}

// The last columns priced from the set `id` (`rows` x `columns`, values `a`)
// over `paths` paths are ST * A of those columns.
void ExpectLastColumnsAreTheProduct(v1::Pricer::Stub& stub, const std::string& id,
                                    const std::vector<float>& a, int64_t rows, int64_t columns,
                                    int64_t paths) {
  const int64_t begin = columns - 250;
  v1::PriceRequest request = SetRequest(id, rows, paths);
  request.set_column_begin(begin);
  request.set_column_end(columns);
  request.mutable_output()->set_full(true);
  request.mutable_output()->set_terminal_prices(true);
  const PriceCall call = RunPrice(stub, request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  const std::vector<float> st = AssembleTerminalPrices(call, paths, rows);
  const std::vector<float> sc = AssembleResult(call, paths, columns, begin, columns);
  ASSERT_FALSE(::testing::Test::HasFailure());
  ExpectProductColumns(st, sc, a, paths, rows, begin, columns);
}

TEST(Upload, LargeSetInOneMiBChunksIsStoredOnceAndPricedLikeInline) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  // 200 MB: fifty times the message limit, three times the request limit.
  const int64_t rows = 500, columns = 100'000, bytes = rows * columns * 4;
  const std::vector<float> a = TestMatrix(rows, columns);
  PricerClient client(Target(*server));

  v1::ScenarioSet set;
  const grpc::Status status = client.UploadScenarios(rows, columns, a, &set, 1 << 20);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(set.id(), ScenarioStore::IdOf(rows, columns, a));
  EXPECT_THAT(set.id(), ::testing::MatchesRegex("[0-9a-f]{64}"));
  EXPECT_EQ(set.rows(), rows);
  EXPECT_EQ(set.columns(), columns);
  EXPECT_EQ(set.bytes(), bytes);
  EXPECT_FALSE(set.existed());
  EXPECT_EQ(server->store().bytes_in_memory(), bytes);

  // Again, in chunks of another (odd) size: found, not stored twice.
  v1::ScenarioSet again;
  const grpc::Status second = client.UploadScenarios(rows, columns, a, &again, 3'000'001);
  ASSERT_TRUE(second.ok()) << second.error_message();
  EXPECT_EQ(again.id(), set.id());
  EXPECT_TRUE(again.existed());
  EXPECT_EQ(again.bytes(), bytes);
  EXPECT_EQ(server->store().bytes_in_memory(), bytes);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  const int64_t paths = 256;
  ASSERT_NO_FATAL_FAILURE(
      ExpectSetStatisticsLikeInlineSlice(*stub, set.id(), a, rows, columns, paths));
  ExpectLastColumnsAreTheProduct(*stub, set.id(), a, rows, columns, paths);
}

TEST(Upload, SetPricesBitwiseLikeTheSameMatrixInline) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  const int64_t rows = 50, columns = 700, paths = 1000;
  const std::vector<float> a = TestMatrix(rows, columns);
  PricerClient client(Target(*server));
  v1::ScenarioSet set;
  // Small chunks: many of them, one not a multiple of a float.
  const grpc::Status status = client.UploadScenarios(rows, columns, a, &set, 4099);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(set.bytes(), rows * columns * 4);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  v1::PriceRequest inline_request = SmallRequest(rows, paths, 1);
  SetInlineMatrix(a, rows, columns, &inline_request);
  v1::PriceRequest set_request = SetRequest(set.id(), rows, paths);
  for (v1::PriceRequest* request : {&inline_request, &set_request}) {
    RequestEverything(request);
    request->set_column_begin(130);
    request->set_column_end(611);
  }
  ExpectSameResults(RunPrice(*stub, set_request), RunPrice(*stub, inline_request));

  // All columns, statistics only.
  for (v1::PriceRequest* request : {&inline_request, &set_request}) {
    request->set_column_begin(0);
    request->set_column_end(0);
    request->mutable_output()->set_full(false);
    request->mutable_output()->set_terminal_prices(false);
  }
  ExpectSameResults(RunPrice(*stub, set_request), RunPrice(*stub, inline_request));

  // And the values are ST * A.
  for (v1::PriceRequest* request : {&inline_request, &set_request}) {
    request->mutable_output()->set_full(true);
    request->mutable_output()->set_terminal_prices(true);
  }
  ExpectResultIsProduct(RunPrice(*stub, set_request), inline_request, a);
}

TEST(Upload, UnknownSetIsNotFoundNamingTheId) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  const std::string id = ScenarioStore::IdOf(4, 10, TestMatrix(4, 10));  // never uploaded
  const grpc::Status status = PriceStatus(*NewStub(*server), SetRequest(id, 4, 100));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("scenarios.scenario_set '" + id + "'"));
  EXPECT_THAT(status.error_message(), HasSubstr("UploadScenarios"));
  const grpc::Status garbage = PriceStatus(*NewStub(*server), SetRequest("no-such-set", 4, 100));
  EXPECT_EQ(garbage.error_code(), grpc::StatusCode::NOT_FOUND) << garbage.error_message();
  EXPECT_THAT(garbage.error_message(), HasSubstr("'no-such-set'"));
}

TEST(Upload, SetWhoseRowsDifferFromTheIssuerCountIsRefused) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  PricerClient client(Target(*server));
  v1::ScenarioSet set;
  ASSERT_TRUE(client.UploadScenarios(6, 20, TestMatrix(6, 20), &set).ok());
  const grpc::Status status = PriceStatus(*NewStub(*server), SetRequest(set.id(), 5, 100));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("scenarios.scenario_set rows is 6"));
  EXPECT_THAT(status.error_message(), HasSubstr("issuer count 5"));
  EXPECT_THAT(status.error_message(), HasSubstr(set.id()));
  // With six issuers it prices.
  const PriceCall call = RunPrice(*NewStub(*server), SetRequest(set.id(), 6, 100));
  EXPECT_TRUE(call.status.ok()) << call.status.error_message();
}

TEST(Upload, SetOverTheStoreBytesIsResourceExhausted) {
  ServerOptions options;
  options.scenario_store_bytes = 1000;
  std::unique_ptr<PricerServer> server = StartTestServer(options);
  ASSERT_NE(server, nullptr);
  PricerClient client(Target(*server));
  v1::ScenarioSet set;
  const std::vector<float> big = TestMatrix(10, 30);  // 1200 bytes
  const grpc::Status status = client.UploadScenarios(10, 30, big, &set, 256);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("1200 bytes"));
  EXPECT_THAT(status.error_message(), HasSubstr("--scenario-store-bytes of 1000"));
  EXPECT_EQ(server->store().bytes_in_memory(), 0);
  const grpc::Status priced =
      PriceStatus(*NewStub(*server), SetRequest(ScenarioStore::IdOf(10, 30, big), 10, 100));
  EXPECT_EQ(priced.error_code(), grpc::StatusCode::NOT_FOUND) << priced.error_message();
  // Exactly the bound is accepted.
  const grpc::Status fits = client.UploadScenarios(10, 25, TestMatrix(10, 25), &set, 256);
  ASSERT_TRUE(fits.ok()) << fits.error_message();
  EXPECT_EQ(server->store().bytes_in_memory(), 1000);
}

TEST(Upload, RestartedServerOnTheSameDirectoryPricesTheSet) {
  std::string pattern = (std::filesystem::temp_directory_path() / "upload_restart_XXXXXX");
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::string dir = pattern;
  ServerOptions options;
  options.scenario_dir = dir;
  const int64_t rows = 8, columns = 300;
  const std::vector<float> a = TestMatrix(rows, columns);

  std::unique_ptr<PricerServer> server = StartTestServer(options);
  ASSERT_NE(server, nullptr);
  v1::ScenarioSet set;
  const grpc::Status status = PricerClient(Target(*server)).UploadScenarios(rows, columns, a, &set);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::PriceRequest request = SetRequest(set.id(), rows, 500);
  RequestEverything(&request);
  const PriceCall before = RunPrice(*NewStub(*server), request);
  ASSERT_TRUE(before.status.ok()) << before.status.error_message();
  server->Shutdown();
  server.reset();

  server = StartTestServer(options);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->store().bytes_in_memory(), 0);
  ExpectSameResults(RunPrice(*NewStub(*server), request), before);
  EXPECT_EQ(server->store().bytes_in_memory(), rows * columns * 4);
  // Uploading it again finds it.
  v1::ScenarioSet again;
  ASSERT_TRUE(PricerClient(Target(*server)).UploadScenarios(rows, columns, a, &again).ok());
  EXPECT_EQ(again.id(), set.id());
  EXPECT_TRUE(again.existed());
  server.reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pricer::testing
