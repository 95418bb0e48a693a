#include "client/lib/reply_parts.h"

#include <grpcpp/support/byte_buffer.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pricer {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

ReceivedReply Decoded(const v1::PriceReply& message) {
  const std::string bytes = message.SerializeAsString();
  grpc::Slice slice(bytes);
  ReceivedReply reply;
  EXPECT_TRUE(DecodeReply(grpc::ByteBuffer(&slice, 1), &reply).ok());
  return reply;
}

// Columns [10, 14) of 2 rows, column c's values c * 10 + row, and
// statistics of every kind, column c's c (target_met: odd columns).
ReceivedReply Chunk() {
  v1::PriceReply message;
  v1::ResultChunk* chunk = message.mutable_chunk();
  chunk->set_column_begin(10);
  chunk->set_column_end(14);
  chunk->set_rows(2);
  std::string values;
  v1::ColumnStatistics* s = chunk->mutable_statistics();
  v1::LevelValues* var = s->add_var();
  var->set_level(0.99);
  for (int c = 10; c < 14; ++c) {
    for (int row = 0; row < 2; ++row) {
      const float value = static_cast<float>(c * 10 + row);
      values.append(reinterpret_cast<const char*>(&value), 4);
    }
    for (auto* field : {s->mutable_mean(), s->mutable_v0(), s->mutable_mean_standard_error(),
                        var->mutable_values(), var->mutable_lower(), var->mutable_upper()}) {
      field->Add(c);
    }
    s->add_target_met(c % 2 == 1);
  }
  chunk->set_values(values);
  // ES contributions of 3 rows, column c's row r c * 100 + r, and a delta of
  // 1 issuer, column c's -c.
  v1::Contributions* contributions = chunk->add_contributions();
  contributions->set_level(0.975);
  contributions->set_rows(3);
  contributions->set_issuers(1);
  for (int c = 10; c < 14; ++c) {
    for (int row = 0; row < 3; ++row) {
      const float value = static_cast<float>(c * 100 + row);
      contributions->mutable_values()->append(reinterpret_cast<const char*>(&value), 4);
    }
    const float delta = static_cast<float>(-c);
    contributions->mutable_delta()->append(reinterpret_cast<const char*>(&delta), 4);
  }
  return Decoded(message);
}

std::vector<float> Floats(const ValueBytes& bytes) {
  std::vector<float> floats(static_cast<size_t>(bytes.size() / 4));
  bytes.CopyTo(reinterpret_cast<char*>(floats.data()));
  return floats;
}

TEST(ChunkPart, CutsTheValuesAndEveryPerColumnArray) {
  const ReceivedReply part = ChunkPart(Chunk(), 11, 13);
  const v1::ResultChunk& chunk = part.message.chunk();
  EXPECT_EQ(chunk.column_begin(), 11);
  EXPECT_EQ(chunk.column_end(), 13);
  EXPECT_EQ(chunk.rows(), 2);
  EXPECT_THAT(Floats(part.values), ElementsAre(110, 111, 120, 121));
  const v1::ColumnStatistics& s = chunk.statistics();
  EXPECT_THAT(s.mean(), ElementsAre(11, 12));
  EXPECT_THAT(s.v0(), ElementsAre(11, 12));
  EXPECT_THAT(s.mean_standard_error(), ElementsAre(11, 12));
  EXPECT_THAT(s.stddev(), IsEmpty());  // not asked for: stays empty
  EXPECT_THAT(s.target_met(), ElementsAre(true, false));
  ASSERT_EQ(s.var_size(), 1);
  EXPECT_EQ(s.var(0).level(), 0.99);
  EXPECT_THAT(s.var(0).values(), ElementsAre(11, 12));
  EXPECT_THAT(s.var(0).lower(), ElementsAre(11, 12));
  EXPECT_THAT(s.var(0).upper(), ElementsAre(11, 12));
  EXPECT_THAT(s.var(0).standard_error(), IsEmpty());
  // The contributions: the level's message, and its arrays' columns.
  ASSERT_EQ(chunk.contributions_size(), 1);
  EXPECT_EQ(chunk.contributions(0).level(), 0.975);
  EXPECT_EQ(chunk.contributions(0).rows(), 3);
  ASSERT_EQ(part.contributions.size(), 1u);
  const ContributionArrays& arrays = part.contributions[0];
  EXPECT_THAT(Floats(arrays.at(v1::Contributions::kValuesFieldNumber)),
              ElementsAre(1100, 1101, 1102, 1200, 1201, 1202));
  EXPECT_THAT(Floats(arrays.at(v1::Contributions::kDeltaFieldNumber)), ElementsAre(-11, -12));
  EXPECT_EQ(arrays.count(v1::Contributions::kVegaFieldNumber), 0u);
}

// An array too short for the cut stays empty, for PriceResults to refuse.
TEST(ChunkPart, LeavesAShortArrayEmpty) {
  ReceivedReply chunk = Chunk();
  chunk.message.mutable_chunk()->mutable_statistics()->mutable_mean()->RemoveLast();
  EXPECT_THAT(ChunkPart(chunk, 12, 14).message.chunk().statistics().mean(), IsEmpty());
  EXPECT_THAT(ChunkPart(chunk, 10, 12).message.chunk().statistics().mean(), ElementsAre(10, 11));
}

TEST(PricesPart, CutsTheIssuers) {
  v1::PriceReply message;
  v1::TerminalPricesChunk* prices = message.mutable_prices();
  prices->set_issuer_begin(0);
  prices->set_issuer_end(3);
  prices->set_rows(1);
  const std::vector<float> values = {5, 6, 7};
  prices->set_values(reinterpret_cast<const char*>(values.data()), 12);
  const ReceivedReply part = PricesPart(Decoded(message), 1, 3);
  EXPECT_EQ(part.message.prices().issuer_begin(), 1);
  EXPECT_EQ(part.message.prices().issuer_end(), 3);
  EXPECT_EQ(part.message.prices().rows(), 1);
  EXPECT_THAT(Floats(part.values), ElementsAre(6, 7));
}

TEST(ValuesPart, CutsTheInstruments) {
  v1::PriceReply message;
  v1::InstrumentValuesChunk* v = message.mutable_values();
  v->set_instrument_begin(4);
  v->set_instrument_end(7);
  v->set_rows(2);
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};  // three instruments of two paths
  v->set_values(reinterpret_cast<const char*>(values.data()), 24);
  const ReceivedReply part = ValuesPart(Decoded(message), 5, 6);
  EXPECT_EQ(part.message.values().instrument_begin(), 5);
  EXPECT_EQ(part.message.values().instrument_end(), 6);
  EXPECT_EQ(part.message.values().rows(), 2);
  EXPECT_THAT(Floats(part.values), ElementsAre(3, 4));
}

}  // namespace
}  // namespace pricer
