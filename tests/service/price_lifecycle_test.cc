// The life of a call beyond the happy path: cancellation by the client, the
// request size limit and server shutdown under a slow reader.
#include <grpcpp/client_context.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/service/service_test_util.h"
#include "tests/time_scale.h"

namespace pricer::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

// Full output of 200,000 generated columns: about 4 GB of SC in dozens of
// shards, far more than any test lets finish.
v1::PriceRequest LargeFullRequest() {
  v1::PriceRequest request = SmallRequest(/*issuers=*/50, /*paths=*/5000, /*columns=*/200'000);
  request.mutable_output()->set_full(true);
  return request;
}

// A small request whose result is checked against the float64 reference.
void ExpectServesCorrectly(v1::Pricer::Stub& stub) {
  const int64_t issuers = 6, paths = 800, columns = 70;
  v1::PriceRequest request = SmallRequest(issuers, paths, columns);
  const std::vector<float> a = TestMatrix(issuers, columns);
  SetInlineMatrix(a, issuers, columns, &request);
  request.mutable_output()->set_full(true);
  request.mutable_output()->set_terminal_prices(true);
  const PriceCall call = RunPrice(stub, request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  ASSERT_TRUE(call.replies.back().has_finished());
  ExpectResultIsProduct(call, request, a);
}

TEST(Cancellation, StopsTheJobAndFreesItsMemory) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  int64_t shard_count = 0;
  {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<v1::PriceReply>> reader =
        stub->Price(&context, LargeFullRequest());
    v1::PriceReply reply;
    ASSERT_TRUE(reader->Read(&reply));
    ASSERT_TRUE(reply.has_accepted());
    shard_count = reply.accepted().plan().shard_count();
    ASSERT_GE(shard_count, 20);
    ASSERT_TRUE(reader->Read(&reply));
    ASSERT_TRUE(reply.has_chunk());
    context.TryCancel();
    int64_t more = 0;
    while (reader->Read(&reply)) ++more;
    const grpc::Status status = reader->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
    EXPECT_LT(more, 1000);
  }

  // The running shard ends at its boundary; then the job's memory is freed:
  // in < 0.37 s (the whole test less its sleep, measured); bound 3 s x TimeScale().
  const Clock::time_point start = Clock::now();
  v1::ListDevicesReply devices = ListDevices(*stub);
  while (devices.devices(0).bytes_in_use() != 0 && SecondsSince(start) < 3.0 * TimeScale()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    devices = ListDevices(*stub);
  }
  EXPECT_EQ(devices.devices(0).bytes_in_use(), 0)
      << "still in use " << SecondsSince(start) << " s after the cancel";
  const int64_t done = devices.devices(0).shards_done();
  EXPECT_LT(done, shard_count);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(ListDevices(*stub).devices(0).shards_done(), done) << "shards still run";

  ExpectServesCorrectly(*stub);
}

// A request whose inline matrix has `bytes` bytes (4 issuers).
v1::PriceRequest RequestWithMatrixBytes(int64_t bytes) {
  const int64_t issuers = 4, columns = bytes / (4 * issuers);
  v1::PriceRequest request = SmallRequest(issuers, /*paths=*/100, columns);
  SetInlineMatrix(TestMatrix(issuers, columns), issuers, columns, &request);
  return request;
}

TEST(RequestSizeLimit, LargeInlineMatrixIsRefusedWithTheLimit) {
  ServerOptions options;
  options.max_request_bytes = 1 << 20;
  std::unique_ptr<PricerServer> server = StartTestServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  const PriceCall over = RunPrice(*stub, RequestWithMatrixBytes(3 << 19));  // 1.5 MiB
  EXPECT_EQ(over.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << over.status.error_message();
  EXPECT_THAT(over.status.error_message(), HasSubstr("1048576"));
  EXPECT_THAT(over.status.error_message(), HasSubstr("upload"));
  EXPECT_TRUE(over.replies.empty());

  // Over twice the limit, gRPC's transport refuses it before the service.
  const PriceCall far_over = RunPrice(*stub, RequestWithMatrixBytes(5 << 19));  // 2.5 MiB
  EXPECT_EQ(far_over.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << far_over.status.error_message();
  EXPECT_TRUE(far_over.replies.empty());

  const v1::PriceRequest under_request = RequestWithMatrixBytes(1 << 19);  // 0.5 MiB
  const PriceCall under = RunPrice(*stub, under_request);
  ASSERT_TRUE(under.status.ok()) << under.status.error_message();
  ASSERT_TRUE(under.replies.back().has_finished());
  EXPECT_EQ(under.replies.front().accepted().column_end(),
            under_request.scenarios().matrix().columns());
}

TEST(Shutdown, EndsASlowReadersCallWithinTheGracePeriod) {
  std::unique_ptr<PricerServer> server = StartTestServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);

  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::PriceReply>> reader =
      stub->Price(&context, LargeFullRequest());
  v1::PriceReply reply;
  ASSERT_TRUE(reader->Read(&reply));
  ASSERT_TRUE(reply.has_accepted());
  ASSERT_TRUE(reader->Read(&reply));
  ASSERT_TRUE(reply.has_chunk());

  constexpr double kGraceSeconds = 1.0;
  const Clock::time_point start = Clock::now();
  std::future<double> shutdown = std::async(std::launch::async, [&] {
    server->Shutdown(kGraceSeconds);
    return SecondsSince(start);
  });
  // Read on, slowly, until the server ends the call.
  bool finished = false;
  while (reader->Read(&reply)) {
    finished = finished || reply.has_finished();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const grpc::Status status = reader->Finish();
  const double call_ended = SecondsSince(start);
  EXPECT_FALSE(finished);
  EXPECT_THAT(status.error_code(),
              AnyOf(grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::CANCELLED))
      << status.error_message();
  // The job is far longer than the test: an end within the grace period and
  // a margin shows that the shutdown, not the job, ended the call. Measured:
  // < 1.29 s (the whole test); bound 1 s + 3 s x TimeScale().
  const double bound = kGraceSeconds + 3.0 * TimeScale();
  EXPECT_LT(call_ended, bound);

  ASSERT_EQ(shutdown.wait_for(Scaled(std::chrono::seconds(10))), std::future_status::ready)
      << "Shutdown did not return";
  EXPECT_LT(shutdown.get(), bound);
}

}  // namespace
}  // namespace pricer::testing
