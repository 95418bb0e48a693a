// Bearer tokens (auth.h): the token file's rules, and calls to a real
// in-process server with and without a token.
#include "server/service/auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "tests/service/service_test_util.h"

namespace pricer::testing {
namespace {

using ::testing::HasSubstr;

std::string WriteTokenFile(const std::string& text, mode_t mode = 0600) {
  static int count = 0;
  const std::string path = ::testing::TempDir() + "auth-test-" + std::to_string(getpid()) + "-" +
                           std::to_string(++count);
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
  return path;
}

TEST(TokenFile, NamesEachClientWithItsHighestPriority) {
  absl::StatusOr<Authenticator> auth = Authenticator::FromFile(
      WriteTokenFile("# risk systems\n\nalice s3cret-a\n  bob\ts3cret-b 10  \n"));
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_TRUE(auth->enabled());
  EXPECT_THAT(auth->client_names(), ::testing::ElementsAre("alice", "bob"));
}

TEST(TokenFile, ReadableByOthersIsRefused) {
  const std::string path = WriteTokenFile("alice s3cret\n", 0644);
  absl::StatusOr<Authenticator> auth = Authenticator::FromFile(path);
  EXPECT_EQ(auth.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(auth.status().message(), HasSubstr(path));
  EXPECT_THAT(auth.status().message(), HasSubstr("mode 0644"));
}

TEST(TokenFile, MalformedLinesAreRefusedByNumber) {
  struct Case {
    std::string text;
    std::string message;
  };
  for (const Case& c : {
           Case{"alice\n", "line 1: has 1 fields"},
           Case{"alice a b c\n", "line 1: has 4 fields"},
           Case{"alice a\nbob b high\n",
                "line 2: max-priority 'high' is not an integer in [0, 100]"},
           Case{"alice a 101\n", "max-priority '101'"},
           Case{"alice a\nalice b\n", "line 2: client name 'alice' is reserved or already used"},
           Case{"anonymous a\n", "client name 'anonymous' is reserved"},
           Case{"alice a\nbob a\n", "line 2: the token of 'bob' is already used"},
           Case{"# nobody\n", "names no client"},
       }) {
    absl::StatusOr<Authenticator> auth = Authenticator::FromFile(WriteTokenFile(c.text));
    EXPECT_EQ(auth.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(auth.status().message(), HasSubstr(c.message)) << c.text;
  }
  EXPECT_THAT(Authenticator::FromFile("/nonexistent/tokens").status().message(),
              HasSubstr("/nonexistent/tokens: cannot read it"));
}

grpc::Status ListDevicesWith(v1::Pricer::Stub& stub, const std::string& metadata) {
  grpc::ClientContext context;
  if (!metadata.empty()) context.AddMetadata("authorization", metadata);
  v1::ListDevicesReply reply;
  return stub.ListDevices(&context, v1::ListDevicesRequest(), &reply);
}

TEST(Tokens, OnlyAKnownBearerTokenIsServed) {
  ServerOptions options;
  options.auth_tokens_file = TesterTokenFile();
  std::unique_ptr<PricerServer> server = StartTestServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  const std::string wrong(std::string(kTesterToken).size(), 'x');
  for (const std::string& metadata :
       {std::string(), "Bearer " + wrong, std::string("Bearer x"),
        std::string("Basic ") + kTesterToken, std::string("Bearer ") + kTesterToken + "x"}) {
    EXPECT_EQ(ListDevicesWith(*stub, metadata).error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << metadata;
  }
  EXPECT_TRUE(ListDevicesWith(*stub, std::string("Bearer ") + kTesterToken).ok());
  const PriceCall refused = RunPrice(*stub, SmallRequest());
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(refused.replies.empty());
  const PriceCall served = RunPrice(*stub, SmallRequest(), kTesterToken);
  EXPECT_TRUE(served.status.ok()) << served.status.error_message();
}

TEST(Tokens, APriorityAboveTheClientsRightIsRefusedNamingBoth) {
  std::unique_ptr<PricerServer> server = StartTestServer();  // anonymous callers: 0
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Pricer::Stub> stub = NewStub(*server);
  v1::PriceRequest request = SmallRequest();
  request.set_priority(5);
  const PriceCall refused = RunPrice(*stub, request);
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(refused.status.error_message(), HasSubstr("priority is 5"));
  EXPECT_THAT(refused.status.error_message(), HasSubstr("may ask for at most 0"));
  request.set_priority(-5);  // lower is anyone's to ask
  EXPECT_TRUE(RunPrice(*stub, request).status.ok());
}

}  // namespace
}  // namespace pricer::testing
