// A targeted Price call that breaks midway (a server in process, port 0):
// its columns arrived scattered, so the retry asks once for the span of the
// gaps, and of that call's chunks only the columns still missing are handed
// on. A call that sends a column twice fails the run; a column an earlier
// call sent is dropped.
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/server_context.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/lib/pricer_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pricer {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// Columns [begin, end) priced with `rows` paths: v0 is the column's index
// plus `rows`, and every column met the target.
v1::PriceReply Chunk(int64_t begin, int64_t end, int64_t rows) {
  v1::PriceReply reply;
  v1::ResultChunk* chunk = reply.mutable_chunk();
  chunk->set_column_begin(begin);
  chunk->set_column_end(end);
  chunk->set_rows(rows);
  for (int64_t c = begin; c < end; ++c) {
    chunk->mutable_statistics()->add_v0(static_cast<double>(c + rows));
    chunk->mutable_statistics()->add_target_met(true);
  }
  return reply;
}

// `service` on a loopback port, shut down at the end of the test.
struct LoopbackServer {
  explicit LoopbackServer(grpc::Service& service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
  }
  ~LoopbackServer() {
    if (server != nullptr) server->Shutdown();
  }
  std::string target() const { return absl::StrCat("127.0.0.1:", port); }

  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

// The first call sends round 0's columns [0, 2), [5, 6) and [8, 10) of
// [0, 10), then breaks; later calls send round 0 and 1 of what they ask for.
class BreakingPricer final : public v1::Pricer::Service {
 public:
  grpc::Status Price(grpc::ServerContext*, const v1::PriceRequest* request,
                     grpc::ServerWriter<v1::PriceReply>* writer) override {
    const int64_t begin = request->column_begin(), end = request->column_end();
    bool first = false;
    {
      absl::MutexLock lock(&mu_);
      first = asked_.empty();
      asked_.emplace_back(begin, end);
    }
    v1::PriceReply reply;
    v1::JobAccepted* accepted = reply.mutable_accepted();
    accepted->set_issuers(1);
    accepted->set_paths(100);
    accepted->set_column_begin(begin);
    accepted->set_column_end(end);
    writer->Write(reply);
    reply.mutable_round()->set_paths(100);
    writer->Write(reply);
    if (first) {
      for (const auto& [b, e] : {std::pair{0, 2}, std::pair{5, 6}, std::pair{8, 10}}) {
        writer->Write(Chunk(b, e, 100));
      }
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "broken on purpose");
    }
    reply.mutable_round()->set_round(1);
    reply.mutable_round()->set_paths(200);
    writer->Write(reply);
    writer->Write(Chunk(begin, end, 200));
    reply.mutable_finished();
    writer->Write(reply);
    return grpc::Status::OK;
  }

  std::vector<std::pair<int64_t, int64_t>> asked() {
    absl::MutexLock lock(&mu_);
    return asked_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::pair<int64_t, int64_t>> asked_ ABSL_GUARDED_BY(mu_);
};

TEST(PricerClientTarget, ARetryAsksForTheSpanOfTheGapsAndDropsRepeats) {
  BreakingPricer pricer;
  const LoopbackServer server(pricer);
  ASSERT_NE(server.server, nullptr);

  v1::PriceRequest request;
  request.set_column_end(10);
  request.mutable_target()->set_statistic(v1::PrecisionTarget::STATISTIC_MEAN);
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::vector<double> v0;
  int rounds = 0;
  PricerClient client(server.target());
  const grpc::Status status = client.Price(request, [&](const ReceivedReply& reply) {
    rounds += reply.message.has_round() ? 1 : 0;
    if (reply.message.has_chunk()) {
      const v1::ResultChunk& chunk = reply.message.chunk();
      chunks.emplace_back(chunk.column_begin(), chunk.column_end());
      v0.insert(v0.end(), chunk.statistics().v0().begin(), chunk.statistics().v0().end());
    }
    return grpc::Status::OK;
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  // Not [2, 5) and [6, 8) in two calls.
  EXPECT_THAT(pricer.asked(), ElementsAre(Pair(0, 10), Pair(2, 8)));
  EXPECT_THAT(chunks, ElementsAre(Pair(0, 2), Pair(5, 6), Pair(8, 10), Pair(2, 5), Pair(6, 8)));
  // Column 5 from the first call (100 paths), the gaps from the retry's
  // chunk [2, 8) of 200.
  EXPECT_THAT(v0, ElementsAre(100, 101, 105, 108, 109, 202, 203, 204, 206, 207));
  EXPECT_EQ(rounds, 3);
}

// Every call sends columns [0, 3) of what it asks for twice, then the rest.
class RepeatingPricer final : public v1::Pricer::Service {
 public:
  grpc::Status Price(grpc::ServerContext*, const v1::PriceRequest* request,
                     grpc::ServerWriter<v1::PriceReply>* writer) override {
    const int64_t begin = request->column_begin(), end = request->column_end();
    v1::PriceReply reply;
    v1::JobAccepted* accepted = reply.mutable_accepted();
    accepted->set_issuers(1);
    accepted->set_paths(100);
    accepted->set_column_begin(begin);
    accepted->set_column_end(end);
    writer->Write(reply);
    if (request->has_target()) {
      reply.mutable_round()->set_paths(100);
      writer->Write(reply);
    }
    writer->Write(Chunk(begin, begin + 3, 100));
    writer->Write(Chunk(begin, begin + 3, 100));
    writer->Write(Chunk(begin + 3, end, 100));
    reply.mutable_finished();
    writer->Write(reply);
    return grpc::Status::OK;
  }
};

// A call that sends a column twice contradicts itself, targeted or not
// (only what an earlier call sent is dropped).
class RepeatWithinACall : public ::testing::TestWithParam<bool> {};

TEST_P(RepeatWithinACall, FailsTheRun) {
  RepeatingPricer pricer;
  const LoopbackServer server(pricer);
  ASSERT_NE(server.server, nullptr);

  v1::PriceRequest request;
  request.set_column_end(10);
  if (GetParam()) request.mutable_target()->set_statistic(v1::PrecisionTarget::STATISTIC_MEAN);
  std::vector<std::pair<int64_t, int64_t>> chunks;
  PricerClient client(server.target());
  const grpc::Status status = client.Price(request, [&](const ReceivedReply& reply) {
    if (reply.message.has_chunk()) {
      chunks.emplace_back(reply.message.chunk().column_begin(), reply.message.chunk().column_end());
    }
    return grpc::Status::OK;
  });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(status.error_message(), "the server sent columns of [0, 3) twice");
  EXPECT_THAT(chunks, ElementsAre(Pair(0, 3)));
}

INSTANTIATE_TEST_SUITE_P(TargetedOrNot, RepeatWithinACall, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Targeted" : "Untargeted";
                         });

// The first call sends every column, then breaks before the terminal
// prices; the next, asked for them with column [0, 1), sends that column's
// chunk again and the prices.
class PricesLastPricer final : public v1::Pricer::Service {
 public:
  grpc::Status Price(grpc::ServerContext*, const v1::PriceRequest* request,
                     grpc::ServerWriter<v1::PriceReply>* writer) override {
    const int64_t begin = request->column_begin(), end = request->column_end();
    v1::PriceReply reply;
    v1::JobAccepted* accepted = reply.mutable_accepted();
    accepted->set_issuers(1);
    accepted->set_paths(2);
    accepted->set_column_begin(begin);
    accepted->set_column_end(end);
    writer->Write(reply);
    writer->Write(Chunk(begin, end, 2));
    if (++calls_ == 1) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "broken on purpose");
    v1::TerminalPricesChunk* prices = reply.mutable_prices();
    prices->set_issuer_end(1);
    prices->set_rows(2);
    prices->set_values(std::string(8, '\0'));
    writer->Write(reply);
    return grpc::Status::OK;
  }
  std::atomic<int> calls_ = 0;
};

TEST(PricerClientRepeats, TheChunkOfACallForThePricesIsDropped) {
  PricesLastPricer pricer;
  const LoopbackServer server(pricer);
  ASSERT_NE(server.server, nullptr);

  v1::PriceRequest request;
  request.set_column_end(4);
  request.mutable_output()->set_terminal_prices(true);
  request.mutable_output()->mutable_statistics();
  std::vector<std::pair<int64_t, int64_t>> chunks;
  int prices = 0;
  PricerClient client(server.target());
  const grpc::Status status = client.Price(request, [&](const ReceivedReply& reply) {
    prices += reply.message.has_prices() ? 1 : 0;
    if (reply.message.has_chunk()) {
      chunks.emplace_back(reply.message.chunk().column_begin(), reply.message.chunk().column_end());
    }
    return grpc::Status::OK;
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(pricer.calls_, 2);
  EXPECT_THAT(chunks, ElementsAre(Pair(0, 4)));
  EXPECT_EQ(prices, 1);
}

}  // namespace
}  // namespace pricer
