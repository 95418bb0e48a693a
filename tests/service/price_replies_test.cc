// The replies of the Price and ListDevices calls of a real in-process
// server: their order, the plan, chunk shapes and sizes within the default
// receive limit, reproducibility across chunk widths and column ranges, and
// the device accounting.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/service/service_test_util.h"

namespace pricer::testing {
namespace {

using ::testing::ElementsAre;

// Payload bytes of one reply as JobFinished.bytes counts them.
int64_t PayloadBytes(const v1::PriceReply& reply) {
  if (reply.has_prices()) return static_cast<int64_t>(reply.prices().values().size());
  if (!reply.has_chunk()) return 0;
  const v1::ColumnStatistics& s = reply.chunk().statistics();
  int64_t doubles = s.v0_size() + s.mean_size() + s.stddev_size() + s.min_size() + s.max_size();
  for (const auto* levels : {&s.quantiles(), &s.var(), &s.es()}) {
    for (const v1::LevelValues& level : *levels) doubles += level.values_size();
  }
  return static_cast<int64_t>(reply.chunk().values().size()) + 8 * doubles;
}

const v1::JobAccepted& Accepted(const PriceCall& call) {
  static const v1::JobAccepted kNone;
  if (call.replies.empty() || !call.replies.front().has_accepted()) return kNone;
  return call.replies.front().accepted();
}

// The plan and sizes an `accepted` reply announces for a job of `issuers`
// x `paths` over `columns` columns in chunks of 50 on the one cpu device.
void ExpectAccepted(const v1::JobAccepted& accepted, int64_t issuers, int64_t paths,
                    int64_t columns) {
  EXPECT_FALSE(accepted.job_id().empty());
  EXPECT_GE(accepted.plan().shard_count(), 1);
  EXPECT_GT(accepted.plan().shard_columns(), 0);
  EXPECT_EQ(accepted.plan().shard_columns() % 64, 0);
  EXPECT_GE(accepted.plan().shard_columns() * accepted.plan().shard_count(), columns);
  EXPECT_EQ(accepted.plan().chunk_columns(), 50);
  EXPECT_THAT(accepted.plan().devices(), ElementsAre("cpu0"));
  EXPECT_EQ(accepted.issuers(), issuers);
  EXPECT_EQ(accepted.paths(), paths);
  EXPECT_EQ(accepted.column_begin(), 0);
  EXPECT_EQ(accepted.column_end(), columns);
}

// A chunk of at most 50 of the `paths`-row columns with their SC and the basic
// four statistics (and V0), nothing else; returns its width.
int64_t ExpectBasicFourChunk(const v1::ResultChunk& chunk, int64_t paths) {
  const int64_t width = chunk.column_end() - chunk.column_begin();
  EXPECT_GE(width, 1);
  EXPECT_LE(width, 50);
  EXPECT_EQ(chunk.rows(), paths);
  EXPECT_EQ(static_cast<int64_t>(chunk.values().size()), 4 * chunk.rows() * width);
  EXPECT_EQ(chunk.statistics().v0_size(), width);
  EXPECT_EQ(chunk.statistics().mean_size(), width);
  EXPECT_EQ(chunk.statistics().stddev_size(), width);
  EXPECT_EQ(chunk.statistics().min_size(), width);
  EXPECT_EQ(chunk.statistics().max_size(), width);
  EXPECT_EQ(chunk.statistics().quantiles_size(), 0);
  EXPECT_EQ(chunk.statistics().var_size(), 0);
  EXPECT_EQ(chunk.statistics().es_size(), 0);
  return width;
}

TEST(Price, RepliesComeAcceptedThenChunksThenFinished) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  const int64_t issuers = 8, paths = 2000, columns = 300;
  v1::PriceRequest request = SmallRequest(issuers, paths, columns);
  request.mutable_output()->set_full(true);
  request.mutable_output()->mutable_statistics();  // present but empty: the basic four
  request.mutable_output()->set_terminal_prices(true);
  request.mutable_output()->set_chunk_columns(50);
  const PriceCall call = RunPrice(*NewStub(*server), request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  ASSERT_GE(call.replies.size(), 3u);

  ASSERT_TRUE(call.replies.front().has_accepted());
  const v1::JobAccepted& accepted = call.replies.front().accepted();
  ExpectAccepted(accepted, issuers, paths, columns);

  ASSERT_TRUE(call.replies.back().has_finished());
  int64_t payload = 0, chunk_columns = 0, price_chunks = 0;
  for (size_t k = 1; k + 1 < call.replies.size(); ++k) {
    const v1::PriceReply& reply = call.replies[k];
    ASSERT_TRUE(reply.has_chunk() || reply.has_prices()) << "reply " << k << " is out of order";
    payload += PayloadBytes(reply);
    if (reply.has_prices()) {
      ++price_chunks;
      const v1::TerminalPricesChunk& prices = reply.prices();
      EXPECT_EQ(static_cast<int64_t>(prices.values().size()),
                4 * prices.rows() * (prices.issuer_end() - prices.issuer_begin()));
      continue;
    }
    chunk_columns += ExpectBasicFourChunk(reply.chunk(), paths);
  }
  EXPECT_EQ(chunk_columns, columns);
  EXPECT_EQ(price_chunks, 1);  // 8 issuers of 2000 paths fit one message
  AssembleResult(call, paths, columns, 0, columns);
  AssembleTerminalPrices(call, paths, issuers);

  const v1::JobFinished& finished = call.replies.back().finished();
  EXPECT_EQ(finished.flops(), 2.0 * paths * issuers * columns);
  EXPECT_EQ(finished.bytes(), payload);
  // Per column: P float32 values and five float64 statistics (v0 and the basic four).
  EXPECT_EQ(payload, 4 * paths * issuers + (4 * paths + 40) * columns);
  EXPECT_GE(finished.elapsed_seconds(), 0);
}

TEST(Price, MillionPathRepliesFitTheDefaultReceiveLimit) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  const int64_t issuers = 2, paths = 1'000'000, columns = 3;
  v1::PriceRequest request = SmallRequest(issuers, paths, columns);
  request.mutable_output()->set_full(true);
  request.mutable_output()->mutable_statistics();  // present but empty: the basic four
  request.mutable_output()->set_terminal_prices(true);
  request.mutable_output()->set_chunk_columns(3);
  // The stub keeps gRPC's default 4 MiB receive limit: a bigger reply would
  // end the call with RESOURCE_EXHAUSTED.
  const PriceCall call = RunPrice(*NewStub(*server), request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  EXPECT_EQ(Accepted(call).plan().chunk_columns(), 1);  // lowered from 3
  int64_t chunks = 0, prices = 0;
  for (const v1::PriceReply& reply : call.replies) {
    EXPECT_LT(reply.ByteSizeLong(), 4u << 20);
    if (reply.has_chunk()) {
      ++chunks;
      EXPECT_EQ(reply.chunk().values().size(), 4u * paths);
    }
    if (reply.has_prices()) {
      ++prices;
      EXPECT_EQ(reply.prices().values().size(), 4u * paths);
    }
  }
  EXPECT_EQ(chunks, columns);
  EXPECT_EQ(prices, issuers);
  ASSERT_TRUE(call.replies.back().has_finished());
  EXPECT_EQ(call.replies.back().finished().flops(), 2.0 * paths * issuers * columns);
}

// Full SC of `request` with the given chunk width and column range.
std::vector<float> FullResult(v1::Pricer::Stub& stub, v1::PriceRequest request,
                              int64_t chunk_columns, int64_t begin, int64_t end) {
  request.mutable_output()->set_full(true);
  request.mutable_output()->set_chunk_columns(chunk_columns);
  request.set_column_begin(begin);
  request.set_column_end(end);
  const PriceCall call = RunPrice(stub, request);
  EXPECT_TRUE(call.status.ok()) << call.status.error_message();
  const v1::JobAccepted& accepted = Accepted(call);
  const int64_t columns = request.scenarios().generated().columns();
  EXPECT_EQ(accepted.column_begin(), begin);
  EXPECT_EQ(accepted.column_end(), end == 0 ? columns : end);
  if (chunk_columns > 0) {
    EXPECT_EQ(accepted.plan().chunk_columns(), chunk_columns);
    for (const v1::PriceReply& reply : call.replies) {
      if (reply.has_chunk()) {
        EXPECT_LE(reply.chunk().column_end() - reply.chunk().column_begin(), chunk_columns);
      }
    }
  }
  return AssembleResult(call, request.paths(), columns, begin, end == 0 ? columns : end);
}

TEST(Price, ResultIsBitwiseIdenticalAcrossChunkWidthsAndColumnRanges) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  const int64_t issuers = 20, paths = 1000, columns = 400;
  const v1::PriceRequest request = SmallRequest(issuers, paths, columns);

  const std::vector<float> by64 = FullResult(*stub, request, 64, 0, 0);
  const std::vector<float> by5 = FullResult(*stub, request, 5, 0, 0);
  ASSERT_EQ(by64.size(), by5.size());
  EXPECT_EQ(std::memcmp(by64.data(), by5.data(), by64.size() * sizeof(float)), 0);

  const std::vector<float> range = FullResult(*stub, request, 0, 70, 300);
  ASSERT_EQ(range.size(), by64.size());
  EXPECT_EQ(std::memcmp(range.data() + 70 * paths, by64.data() + 70 * paths,
                        (300 - 70) * paths * sizeof(float)),
            0);
  EXPECT_TRUE(std::isnan(range[69 * paths]));
  EXPECT_TRUE(std::isnan(range[300 * paths]));
  EXPECT_FALSE(std::isnan(by64[0]));
}

TEST(ListDevices, ReportsTheCpuDeviceAndItsAccounting) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  const v1::ListDevicesReply before = ListDevices(*stub);
  ASSERT_EQ(before.devices_size(), 1);
  EXPECT_EQ(before.devices(0).name(), "cpu0");
  EXPECT_EQ(before.devices(0).kind(), "cpu");
  EXPECT_EQ(before.devices(0).memory_budget_bytes(), kTestBudgetBytes);
  EXPECT_EQ(before.devices(0).bytes_in_use(), 0);
  EXPECT_EQ(before.devices(0).peak_bytes(), 0);
  EXPECT_EQ(before.devices(0).shards_done(), 0);

  const int64_t issuers = 10, paths = 3000, columns = 500;
  const PriceCall call = RunPrice(*stub, SmallRequest(issuers, paths, columns));
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  const int64_t shards = Accepted(call).plan().shard_count();
  ASSERT_GE(shards, 1);

  const v1::ListDevicesReply after = ListDevices(*stub);
  ASSERT_EQ(after.devices_size(), 1);
  EXPECT_EQ(after.devices(0).shards_done(), before.devices(0).shards_done() + shards);
  EXPECT_EQ(after.devices(0).bytes_in_use(), 0);
  EXPECT_GE(after.devices(0).peak_bytes(), 4 * paths * issuers);  // at least ST
  EXPECT_LE(after.devices(0).peak_bytes(), kTestBudgetBytes);
  EXPECT_EQ(after.devices(0).memory_budget_bytes(), kTestBudgetBytes);
}

}  // namespace
}  // namespace pricer::testing
