// UploadScenarios against a real in-process server: a 200 MB set in 1 MiB
// chunks, pricing by id bitwise like the same matrix inline, refused uploads that store nothing,
// the store's byte bound, and a restart on the same --scenario-dir.
#include <grpcpp/client_context.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/lib/pricer_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/scenario_store.h"
#include "tests/service/service_test_util.h"

namespace pricer::testing {
namespace {

using ::testing::HasSubstr;

std::string Target(const PricerServer& server) {
  return "127.0.0.1:" + std::to_string(server.port());
}

// Sends the chunks as they are (the client library only sends well-formed
// uploads), stopping where the server has already refused.
grpc::Status UploadChunks(v1::Pricer::Stub& stub, const std::vector<v1::ScenarioChunk>& chunks,
                          v1::ScenarioSet* set) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientWriter<v1::ScenarioChunk>> writer =
      stub.UploadScenarios(&context, set);
  for (const v1::ScenarioChunk& chunk : chunks) {
    if (!writer->Write(chunk)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

v1::ScenarioChunk Chunk(int64_t rows, int64_t columns, const float* values, size_t count) {
  v1::ScenarioChunk chunk;
  chunk.set_rows(rows);
  chunk.set_columns(columns);
  chunk.set_values(reinterpret_cast<const char*>(values), count * sizeof(float));
  return chunk;
}

// A request of SmallRequest's market on `issuers` issuers, priced from a set.
v1::PriceRequest SetRequest(const std::string& id, int64_t issuers, int64_t paths) {
  v1::PriceRequest request = SmallRequest(issuers, paths, 1);
  request.mutable_scenarios()->set_scenario_set(id);
  return request;
}

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

// The reply of a Price call that must be refused before any work starts.
grpc::Status PriceStatus(v1::Pricer::Stub& stub, const v1::PriceRequest& request) {
  const PriceCall call = RunPrice(stub, request);
  EXPECT_TRUE(call.replies.empty());
  return call.status;
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

  // Statistics of every column of the set, and the same statistics for a
  // 20,480-column slice of it sent inline (41 MB, under the request limit).
  // The slice starts on a 256-column block of A, so each of its blocks is
  // the same GEMM as in the set: the values are bitwise the same.
  const int64_t paths = 256, first = 40'960, count = 20'480;
  v1::PriceRequest by_set = SetRequest(set.id(), rows, paths);
  v1::StatisticsSelection* stats = by_set.mutable_output()->mutable_statistics();
  stats->set_mean(true);
  stats->set_stddev(true);
  stats->set_max(true);
  stats->add_var(0.99);
  stats->add_es(0.975);
  v1::PriceRequest by_value = by_set;
  const std::vector<float> slice(a.begin() + first * rows, a.begin() + (first + count) * rows);
  SetInlineMatrix(slice, rows, count, &by_value);
  const PriceCall set_call = RunPrice(*stub, by_set);
  ASSERT_TRUE(set_call.status.ok()) << set_call.status.error_message();
  const PriceCall inline_call = RunPrice(*stub, by_value);
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

  // The last columns priced from the set are ST * A of those columns.
  const int64_t begin = columns - 250;
  v1::PriceRequest request = SetRequest(set.id(), rows, paths);
  request.set_column_begin(begin);
  request.set_column_end(columns);
  request.mutable_output()->set_full(true);
  request.mutable_output()->set_terminal_prices(true);
  const PriceCall call = RunPrice(*stub, request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  const std::vector<float> st = AssembleTerminalPrices(call, paths, rows);
  const std::vector<float> sc = AssembleResult(call, paths, columns, begin, columns);
  ASSERT_FALSE(::testing::Test::HasFailure());
  ExpectProductColumns(st, sc, a, paths, rows, begin, columns);
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

// Refused uploads on a server that keeps sets on disk: each leaves memory and
// the directory as they were, and its would-be id unknown.
class RefusedUpload : public ::testing::Test {
 protected:
  static constexpr int64_t kRows = 4, kColumns = 10;

  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "upload_test_XXXXXX");
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    ServerOptions options;
    options.scenario_dir = dir_;
    server_ = StartTestServer(options);
    ASSERT_NE(server_, nullptr);
    stub_ = NewStub(*server_);
    // One stored set, so that "nothing changed" is not "nothing at all".
    PricerClient client(Target(*server_));
    v1::ScenarioSet set;
    ASSERT_TRUE(client.UploadScenarios(3, 3, TestMatrix(3, 3), &set).ok());
    bytes_before_ = server_->store().bytes_in_memory();
    ASSERT_EQ(bytes_before_, 36);
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  size_t FileCount() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir_),
                                             std::filesystem::directory_iterator()));
  }

  // Uploads `chunks`, expects INVALID_ARGUMENT with `message` in it, and
  // checks that nothing was stored: `would_be` is not priced.
  void ExpectRefused(const std::vector<v1::ScenarioChunk>& chunks, const std::string& message,
                     const std::string& would_be) {
    v1::ScenarioSet set;
    const grpc::Status status = UploadChunks(*stub_, chunks, &set);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(message));
    EXPECT_TRUE(set.id().empty());
    EXPECT_EQ(server_->store().bytes_in_memory(), bytes_before_);
    EXPECT_EQ(FileCount(), 1u);
    const grpc::Status priced = PriceStatus(*stub_, SetRequest(would_be, kRows, 100));
    EXPECT_EQ(priced.error_code(), grpc::StatusCode::NOT_FOUND) << priced.error_message();
  }

  std::string dir_;
  std::unique_ptr<PricerServer> server_;
  std::unique_ptr<v1::Pricer::Stub> stub_;
  int64_t bytes_before_ = 0;
  const std::vector<float> a_ = TestMatrix(kRows, kColumns);
  const std::string id_ = ScenarioStore::IdOf(kRows, kColumns, a_);
};

TEST_F(RefusedUpload, Truncated) {
  ExpectRefused({Chunk(kRows, kColumns, a_.data(), 16), Chunk(0, 0, a_.data() + 16, 20)},
                "truncated upload: 144 of the 160 bytes of a 4 x 10", id_);
}

TEST_F(RefusedUpload, ShapeChangedInALaterChunk) {
  ExpectRefused({Chunk(kRows, kColumns, a_.data(), 20), Chunk(kRows, 11, a_.data() + 20, 20)},
                "inconsistent upload: a chunk says 4 x 11 after the first said 4 x 10", id_);
  ExpectRefused({Chunk(kRows, kColumns, a_.data(), 20), Chunk(5, 0, a_.data() + 20, 20)},
                "a chunk says 5 x 0", id_);
}

TEST_F(RefusedUpload, MoreBytesThanTheShape) {
  std::vector<float> longer = a_;
  longer.push_back(1.0f);
  ExpectRefused({Chunk(kRows, kColumns, longer.data(), 30), Chunk(0, 0, longer.data() + 30, 11)},
                "more than the 160 bytes of a 4 x 10 float32 matrix", id_);
  // Also a part of a float too many, in one chunk.
  v1::ScenarioChunk chunk = Chunk(kRows, kColumns, a_.data(), a_.size());
  chunk.mutable_values()->push_back('\0');
  ExpectRefused({chunk}, "more than the 160 bytes", id_);
}

TEST_F(RefusedUpload, ValueNotFiniteOrTooLargeNamesItsPosition) {
  std::vector<float> bad = a_;
  bad[3 * kRows + 2] = std::numeric_limits<float>::quiet_NaN();
  ExpectRefused({Chunk(kRows, kColumns, bad.data(), 24), Chunk(0, 0, bad.data() + 24, 16)},
                "values[2, 3] is NaN", ScenarioStore::IdOf(kRows, kColumns, bad));
  bad = a_;
  bad[9 * kRows + 1] = -std::numeric_limits<float>::infinity();
  ExpectRefused({Chunk(kRows, kColumns, bad.data(), bad.size())}, "values[1, 9] is -inf",
                ScenarioStore::IdOf(kRows, kColumns, bad));
  bad = a_;
  bad[0] = 2e8f;
  ExpectRefused({Chunk(kRows, kColumns, bad.data(), bad.size())}, "values[0, 0] is 2e+08",
                ScenarioStore::IdOf(kRows, kColumns, bad));
}

TEST_F(RefusedUpload, FirstChunkWithoutAShape) {
  ExpectRefused({Chunk(0, 0, a_.data(), 20), Chunk(kRows, kColumns, a_.data() + 20, 20)},
                "the first chunk's rows is 0", id_);
  ExpectRefused({Chunk(kRows, 0, a_.data(), a_.size())}, "the first chunk's columns is 0", id_);
  ExpectRefused({Chunk(-4, kColumns, a_.data(), a_.size())}, "the first chunk's rows is -4", id_);
}

TEST_F(RefusedUpload, EmptyStream) { ExpectRefused({}, "empty upload", id_); }

TEST_F(RefusedUpload, ShapeRepeatedInLaterChunksIsAccepted) {
  // The control of the refusals above: the same chunks, consistent, store.
  v1::ScenarioSet set;
  const grpc::Status status = UploadChunks(
      *stub_,
      {Chunk(kRows, kColumns, a_.data(), 16), Chunk(kRows, kColumns, a_.data() + 16, 0),
       Chunk(0, 0, a_.data() + 16, 20), Chunk(0, kColumns, a_.data() + 36, 4)},
      &set);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(set.id(), id_);
  EXPECT_EQ(server_->store().bytes_in_memory(), bytes_before_ + 160);
  EXPECT_EQ(FileCount(), 2u);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/" + id_ + ".set"));
  const PriceCall call = RunPrice(*stub_, SetRequest(id_, kRows, 100));
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
