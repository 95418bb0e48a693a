// EncodeReply against ToReply: the bytes gRPC sends for a chunk (its values
// appended as a slice of the shard's buffer, not copied) parse to the same
// PriceReply as the message ToReply builds, and the buffer lives exactly as
// long as gRPC holds the slice.
#include "server/service/reply_encoding.h"

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <tuple>
#include <vector>

namespace pricer {
namespace {

v1::PriceReply Parse(grpc::ByteBuffer bytes) {
  v1::PriceReply reply;
  EXPECT_TRUE(grpc::SerializationTraits<v1::PriceReply>::Deserialize(&bytes, &reply).ok());
  return reply;
}

void ExpectSameMessage(const ResultChunk& chunk, const StatisticsSelection& selection) {
  v1::PriceReply expected;
  ToReply(chunk, selection, &expected);
  const grpc::ByteBuffer encoded = EncodeReply(chunk, selection);
  EXPECT_EQ(encoded.Length(), expected.ByteSizeLong());
  const v1::PriceReply parsed = Parse(encoded);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, expected))
      << parsed.ShortDebugString().substr(0, 300);
}

// Columns [begin, end) of P = `rows` paths, cut from a larger shard buffer.
ResultChunk Chunk(const std::shared_ptr<const std::vector<float>>& shard, int64_t rows,
                  int64_t begin, int64_t end) {
  ResultChunk chunk;
  chunk.begin = begin;
  chunk.end = end;
  chunk.rows = rows;
  chunk.values = SharedFloats(shard, static_cast<size_t>(begin * rows),
                              static_cast<size_t>((end - begin) * rows));
  return chunk;
}

std::shared_ptr<const std::vector<float>> ShardValues(size_t count) {
  std::vector<float> values(count);
  std::iota(values.begin(), values.end(), 0.5f);
  return std::make_shared<const std::vector<float>>(std::move(values));
}

TEST(ReplyEncodingTest, FullChunksParseToToReplysMessage) {
  StatisticsSelection selection;
  selection.mean = selection.stddev = true;
  selection.var = {0.99};
  const auto shard = ShardValues(1000 * 37);
  // Payloads under and over 127 and 16,383 bytes: one-, two- and three-byte lengths.
  for (const auto& [rows, begin, end] : {std::tuple{1, 0, 5}, std::tuple{10, 3, 7},
                                         std::tuple{1000, 0, 1}, std::tuple{1000, 5, 37}}) {
    ResultChunk chunk = Chunk(shard, rows, begin, end);
    chunk.statistics.Resize(selection, end - begin);
    for (int64_t k = 0; k < end - begin; ++k) chunk.statistics.mean[k] = 1.5 * k;
    ExpectSameMessage(chunk, selection);
    ExpectSameMessage(chunk, StatisticsSelection{});
  }
}

TEST(ReplyEncodingTest, StatisticsOnlyAndTerminalPricesChunks) {
  StatisticsSelection selection = StatisticsSelection::Basic();
  selection.es = {0.975};
  ResultChunk stats;
  stats.begin = 1024;
  stats.end = 3024;
  stats.rows = 10000;
  stats.statistics.Resize(selection, 2000);
  ExpectSameMessage(stats, selection);

  ResultChunk prices = Chunk(ShardValues(300 * 4), 300, 1, 4);
  prices.kind = ResultChunk::Kind::kTerminalPrices;
  ExpectSameMessage(prices, selection);
  EXPECT_TRUE(Parse(EncodeReply(prices, selection)).has_prices());
}

// Contributions: one message per contributed level, ES's first, with the
// band's size, A's rows and the float32 values (and errors) as they are, cut
// from the shard's arrays (columns 1..3 of 5) and sent from where they lie.
TEST(ReplyEncodingTest, ContributionsComeAsFloat32BlocksPerLevelUncopied) {
  StatisticsSelection selection;
  selection.es = {0.975};
  selection.var = {0.99, 0.95};
  selection.es_contributions = {0.975};
  selection.var_contributions = {0.95};
  selection.errors = selection.delta = true;
  ColumnStatistics shard;
  shard.Resize(selection, 5, 7, 2);
  for (size_t n = 0; n < 35; ++n) {
    shard.contributions[0][n] = 0.25f * static_cast<float>(n);
    shard.contributions_se[1][n] = -1.0f * static_cast<float>(n);
  }
  for (size_t n = 0; n < 10; ++n) shard.delta[1][n] = 2.0f * static_cast<float>(n);
  const float* es_values = shard.contributions[0].data();
  const ContributionBlocks blocks = ContributionBlocks::Take(&shard);
  EXPECT_TRUE(shard.contributions.empty() && shard.delta_se.empty());
  ResultChunk chunk = Chunk(ShardValues(10000 * 5), 10000, 1, 4);
  chunk.contributions = blocks.Range(1, 3);
  // 2 levels of values and errors: 7 rows and 2 issuers a column.
  EXPECT_EQ(chunk.contributions.bytes(), 2 * 2 * (21 + 6) * 4);
  ExpectSameMessage(chunk, selection);
  const grpc::ByteBuffer encoded = EncodeReply(chunk, selection);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(encoded.Dump(&slices).ok());
  bool sent_in_place = false;
  for (const grpc::Slice& slice : slices) {
    sent_in_place =
        sent_in_place || slice.begin() == reinterpret_cast<const uint8_t*>(es_values + 7);
  }
  EXPECT_TRUE(sent_in_place) << "ES's contributions were copied into the reply";
  const v1::PriceReply reply = Parse(encoded);
  ASSERT_EQ(reply.chunk().contributions_size(), 2);
  const v1::Contributions& es = reply.chunk().contributions(0);
  EXPECT_EQ(es.measure(), v1::Contributions::MEASURE_ES);
  EXPECT_EQ(es.level(), 0.975);
  EXPECT_EQ(es.rows(), 7);
  EXPECT_EQ(es.issuers(), 2);
  EXPECT_EQ(es.band_paths(), 250);  // 9,999 x 0.025 = 249.975: the 250 smallest
  ASSERT_EQ(es.values().size(), 21 * sizeof(float));
  float value = 0;
  std::memcpy(&value, es.values().data() + 5 * sizeof(float), sizeof(float));
  EXPECT_EQ(value, 3.0f);  // the shard's value 12: column 1's row 5
  const v1::Contributions& var = reply.chunk().contributions(1);
  EXPECT_EQ(var.measure(), v1::Contributions::MEASURE_VAR);
  EXPECT_EQ(var.level(), 0.95);
  // VaR 0.95's ranks 499 and 500 (499.95), 50 each side.
  EXPECT_EQ(var.band_paths(), 102);
  std::memcpy(&value, var.standard_errors().data() + 20 * sizeof(float), sizeof(float));
  EXPECT_EQ(value, -27.0f);
  ASSERT_EQ(var.delta().size(), 6 * sizeof(float));
  std::memcpy(&value, var.delta().data(), sizeof(float));
  EXPECT_EQ(value, 4.0f);
}

TEST(ReplyEncodingTest, TheBufferLivesWhileTheEncodedReplyHoldsIt) {
  auto shard = ShardValues(100 * 8);
  const std::weak_ptr<const std::vector<float>> alive = shard;
  std::optional<grpc::ByteBuffer> encoded;
  {
    const ResultChunk chunk = Chunk(shard, 100, 2, 6);
    encoded = EncodeReply(chunk, StatisticsSelection{});
  }
  shard.reset();
  ASSERT_FALSE(alive.expired());  // the reply's slice holds the values
  const v1::PriceReply reply = Parse(*encoded);
  ASSERT_EQ(reply.chunk().values().size(), 4u * 100 * 4);
  float first = 0;
  std::memcpy(&first, reply.chunk().values().data(), sizeof(first));
  EXPECT_EQ(first, 200.5f);  // SC[0, 2] of the shard
  encoded.reset();
  EXPECT_TRUE(alive.expired());
}

}  // namespace
}  // namespace pricer
