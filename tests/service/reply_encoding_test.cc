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
