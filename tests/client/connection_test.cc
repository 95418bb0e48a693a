#include "client/lib/connection.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pricer {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// A file in the test's temporary directory holding `text`.
std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string Missing(const std::string& name) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove(path);
  return path;
}

TEST(ReadTokenFile, TrimsSurroundingWhitespaceAndNewlines) {
  auto token = ReadTokenFile(WriteFile("connection_token", "  \tabc.DEF-123_~+/=\r\n\n"));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "abc.DEF-123_~+/=");
}

TEST(ReadTokenFile, MissingFileNamesTheFlagAndThePath) {
  const std::string path = Missing("connection_no_token");
  auto token = ReadTokenFile(path);
  EXPECT_EQ(token.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(token.status().message(),
              AllOf(HasSubstr("--token-file"), HasSubstr(path), HasSubstr("No such file")));
}

TEST(ReadTokenFile, EmptyFileIsAnError) {
  const std::string path = WriteFile("connection_empty_token", " \n\n");
  auto token = ReadTokenFile(path);
  EXPECT_EQ(token.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(token.status().message(), AllOf(HasSubstr(path), HasSubstr("empty")));
}

TEST(CreateChannel, PlainTextAndTlsChannels) {
  EXPECT_TRUE(CreateChannel("localhost:50051", {}).ok());
  ConnectionOptions options;
  options.token = "secret";
  options.tls_ca_file = WriteFile("connection_ca.pem", "-----BEGIN CERTIFICATE-----\n");
  options.tls_server_name = "pricer.test";
  auto channel = CreateChannel("localhost:50051", options);
  ASSERT_TRUE(channel.ok()) << channel.status();
  EXPECT_NE(*channel, nullptr);
}

TEST(CreateChannel, TlsIsOnWhenAnyTlsFieldIsSet) {
  ConnectionOptions options;
  options.token = "secret";
  EXPECT_FALSE(options.tls());
  options.tls_server_name = "pricer.test";
  EXPECT_TRUE(options.tls());
  options.tls_server_name.clear();
  options.tls_ca_file = "ca.pem";
  EXPECT_TRUE(options.tls());
}

TEST(CreateChannel, MissingPemFileNamesItsFlagAndPath) {
  const std::string pem = WriteFile("connection_good.pem", "-----BEGIN PRIVATE KEY-----\n");
  const std::string missing = Missing("connection_missing.pem");
  struct Case {
    std::string ConnectionOptions::*field;
    const char* flag;
  };
  for (const Case& c : {Case{&ConnectionOptions::tls_ca_file, "--tls-ca"},
                        Case{&ConnectionOptions::tls_cert_file, "--tls-cert"},
                        Case{&ConnectionOptions::tls_key_file, "--tls-key"}}) {
    SCOPED_TRACE(c.flag);
    ConnectionOptions options;
    options.tls_cert_file = pem;
    options.tls_key_file = pem;
    options.*c.field = missing;
    auto channel = CreateChannel("localhost:50051", options);
    EXPECT_EQ(channel.status().code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(channel.status().message(),
                AllOf(HasSubstr(std::string(c.flag) + ": cannot open " + missing),
                      HasSubstr("No such file")));
  }
}

TEST(CreateChannel, FileThatIsNotPemIsRefused) {
  ConnectionOptions options;
  options.tls_ca_file = WriteFile("connection_not.pem", "secret\n");
  auto channel = CreateChannel("localhost:50051", options);
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(channel.status().message(),
              AllOf(HasSubstr("--tls-ca"), HasSubstr(options.tls_ca_file), HasSubstr("not a PEM")));
}

TEST(CreateChannel, CertificateNeedsItsKey) {
  ConnectionOptions options;
  options.tls_cert_file = WriteFile("connection_cert.pem", "-----BEGIN CERTIFICATE-----\n");
  auto channel = CreateChannel("localhost:50051", options);
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(channel.status().message(), AllOf(HasSubstr("--tls-cert"), HasSubstr("--tls-key")));
}

TEST(CreateChannel, TokenThatMetadataCannotCarryIsRefused) {
  for (const std::string token : {"two words", "line\nbreak", "caf\xc3\xa9"}) {
    SCOPED_TRACE(token);
    ConnectionOptions options;
    options.token = token;
    auto channel = CreateChannel("localhost:50051", options);
    EXPECT_EQ(channel.status().code(), absl::StatusCode::kInvalidArgument);
    // The message says where, not what: the token is a secret.
    EXPECT_THAT(channel.status().message(), AllOf(HasSubstr("offset"), Not(HasSubstr(token))));
  }
}

}  // namespace
}  // namespace pricer
