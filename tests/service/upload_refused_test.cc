// Refused uploads against a real in-process server that keeps sets on disk:
// truncated, reshaped, too long, non-finite or shapeless uploads and an empty
// stream store nothing, and the same chunks, consistent, do.
#include <grpcpp/client_context.h>
#include <stdlib.h>

#include <filesystem>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
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

}  // namespace
}  // namespace pricer::testing
