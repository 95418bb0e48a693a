#include "client/lib/reply_decoding.h"

#include <grpcpp/support/byte_buffer.h>

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace pricer {
namespace {

// `bytes` as gRPC might receive them: cut into slices at `cuts`.
grpc::ByteBuffer Received(const std::string& bytes, std::vector<size_t> cuts) {
  std::vector<grpc::Slice> slices;
  size_t at = 0;
  cuts.push_back(bytes.size());
  for (size_t cut : cuts) {
    cut = std::min(cut, bytes.size());
    if (cut < at) continue;
    slices.emplace_back(bytes.data() + at, cut - at);
    at = cut;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// The bytes fields of a Contributions (its arrays), from its descriptor.
using C = v1::Contributions;
std::vector<const google::protobuf::FieldDescriptor*> Arrays() {
  std::vector<const google::protobuf::FieldDescriptor*> arrays;
  for (int i = 0; i < C::descriptor()->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = C::descriptor()->field(i);
    if (f->type() == google::protobuf::FieldDescriptor::TYPE_BYTES) arrays.push_back(f);
  }
  return arrays;
}

// What protobuf makes of `bytes`, split as DecodeReply splits it.
void ExpectAsProtobufParses(const std::string& bytes, const ReceivedReply& decoded) {
  v1::PriceReply parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  std::string values;
  if (parsed.has_chunk()) values = parsed.chunk().values();
  if (parsed.has_prices()) values = parsed.prices().values();
  // The decoded message has its values apart.
  if (parsed.has_chunk()) parsed.mutable_chunk()->clear_values();
  if (parsed.has_prices()) parsed.mutable_prices()->clear_values();
  // And its contributions' arrays.
  const int levels = parsed.has_chunk() ? parsed.chunk().contributions_size() : 0;
  ASSERT_EQ(std::ssize(decoded.contributions), levels);
  for (int l = 0; l < levels; ++l) {
    C* level = parsed.mutable_chunk()->mutable_contributions(l);
    const ContributionArrays& arrays = decoded.contributions[static_cast<size_t>(l)];
    for (const google::protobuf::FieldDescriptor* f : Arrays()) {
      const auto found = arrays.find(f->number());
      EXPECT_EQ(found == arrays.end() ? "" : found->second.ToString(),
                level->GetReflection()->GetString(*level, f))
          << "level " << l << ", " << f->name();
      level->GetReflection()->ClearField(level, f);
    }
  }
  // Compared serialised: a NaN is not equal to itself, its bytes are.
  EXPECT_EQ(parsed.SerializeAsString(), decoded.message.SerializeAsString())
      << parsed.DebugString() << " against " << decoded.message.DebugString();
  EXPECT_EQ(decoded.values.ToString(), values);
  EXPECT_EQ(decoded.values.size(), static_cast<int64_t>(values.size()));
}

v1::PriceReply ChunkReply(std::mt19937& random, int64_t floats) {
  v1::PriceReply reply;
  v1::ResultChunk* chunk = reply.mutable_chunk();
  chunk->set_column_begin(random() % 1000);
  chunk->set_column_end(chunk->column_begin() + 1 + random() % 300);
  chunk->set_rows(floats);
  std::string values(static_cast<size_t>(floats * 4), '\0');
  for (char& c : values) c = static_cast<char>(random());
  chunk->set_values(values);
  chunk->mutable_statistics()->add_v0(1.5);
  chunk->mutable_statistics()->add_mean(-2.25);
  // Up to two contributed levels, each with some of its arrays.
  for (int l = static_cast<int>(random() % 3); l > 0; --l) {
    C* level = chunk->add_contributions();
    level->set_level(0.975);
    level->set_rows(7);
    level->set_issuers(3);
    for (const google::protobuf::FieldDescriptor* f : Arrays()) {
      if (random() % 3 == 0) continue;
      std::string floats(static_cast<size_t>(4 * (random() % 200)), '\0');
      for (char& c : floats) c = static_cast<char>(random());
      level->GetReflection()->SetString(level, f, floats);
    }
  }
  return reply;
}

TEST(DecodeReply, MatchesProtobufWhereverTheSlicesAreCut) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 300; ++trial) {
    v1::PriceReply reply;
    switch (trial % 4) {
      case 0:
        reply = ChunkReply(random, random() % 3000);
        break;
      case 1: {
        v1::TerminalPricesChunk* prices = reply.mutable_prices();
        prices->set_issuer_begin(3);
        prices->set_issuer_end(5);
        prices->set_rows(100);
        prices->set_values(std::string(800, static_cast<char>(trial)));
        break;
      }
      case 2:
        reply.mutable_accepted()->set_paths(10'000);
        reply.mutable_accepted()->set_column_end(1 << 20);
        break;
      case 3:
        reply.mutable_finished()->set_flops(1e12);
        break;
    }
    const std::string bytes = reply.SerializeAsString();
    std::vector<size_t> cuts;
    for (int c = random() % 6; c > 0; --c) cuts.push_back(random() % (bytes.size() + 1));
    std::sort(cuts.begin(), cuts.end());
    ReceivedReply decoded;
    ASSERT_TRUE(DecodeReply(Received(bytes, cuts), &decoded).ok()) << trial;
    ExpectAsProtobufParses(bytes, decoded);
  }
}

TEST(DecodeReply, TakesFieldsInAnyOrderAndRepeatedMessagesMerge) {
  std::mt19937 random(11);
  // Serialized messages concatenated are their merge: here the values come
  // first, and the chunk's other fields after them, in a second copy.
  const v1::PriceReply first = ChunkReply(random, 64);
  v1::PriceReply second;
  second.mutable_chunk()->set_column_end(4'000);
  second.mutable_chunk()->mutable_statistics()->add_v0(7.0);
  std::string values_first;
  {
    v1::PriceReply only_values;
    only_values.mutable_chunk()->set_values(first.chunk().values());
    v1::PriceReply rest = first;
    rest.mutable_chunk()->clear_values();
    values_first = only_values.SerializeAsString() + rest.SerializeAsString();
  }
  for (const std::string& bytes :
       {values_first, first.SerializeAsString() + second.SerializeAsString(),
        first.SerializeAsString() + first.SerializeAsString()}) {
    ReceivedReply decoded;
    ASSERT_TRUE(DecodeReply(Received(bytes, {1, 5, bytes.size() / 2}), &decoded).ok());
    ExpectAsProtobufParses(bytes, decoded);
  }
  // Another member of the oneof after a chunk replaces it, values and all.
  v1::PriceReply finished;
  finished.mutable_finished()->set_flops(3);
  const std::string replaced = first.SerializeAsString() + finished.SerializeAsString();
  ReceivedReply decoded;
  ASSERT_TRUE(DecodeReply(Received(replaced, {}), &decoded).ok());
  ExpectAsProtobufParses(replaced, decoded);
  EXPECT_TRUE(decoded.values.empty());
}

TEST(DecodeReply, RefusesWhatIsNotAReply) {
  std::mt19937 random(3);
  const std::string bytes = ChunkReply(random, 100).SerializeAsString();
  for (const std::string& bad :
       {bytes.substr(0, bytes.size() - 1), bytes.substr(0, 3), std::string("\x12\xff", 2),
        std::string("\x0b\x00", 2) /* a group */, std::string("\x80", 1),
        // A chunk of 2 bytes whose field's length runs past its end (the
        // fuzzer's first find: it looped).
        std::string("\x12\x02\x2a\x80\x01", 5),
        // A chunk of 1 byte, a tag whose length is the byte after the chunk.
        std::string("\x12\x01\x0a\x00", 4),
        // Lengths protobuf refuses: 0 in 6 bytes (the fuzzer's find of
        // 2026-12-06: decoded here, refused by protobuf), and 2^31 - 1.
        std::string("\x12\x80\x80\x80\x80\x80\x00", 7),
        std::string("\x12\x00\x32\x80\x80\x80\x80\x80\x00", 9),
        std::string("\x12\xff\xff\xff\xff\x07", 6)}) {
    ASSERT_FALSE(v1::PriceReply().ParseFromString(bad)) << bad.size();
    ReceivedReply decoded;
    const absl::Status s = DecodeReply(Received(bad, {1}), &decoded);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad.size();
    EXPECT_NE(s.message().find("not a PriceReply"), std::string::npos) << s;
  }
}

TEST(ValueBytes, RangesShareTheSlicesAndKeepThemAlive) {
  ValueBytes range;
  {
    std::mt19937 random(5);
    const std::string bytes = ChunkReply(random, 1000).SerializeAsString();
    ReceivedReply decoded;
    ASSERT_TRUE(DecodeReply(Received(bytes, {100, 1000, 2000, 3000}), &decoded).ok());
    EXPECT_GE(decoded.values.pieces().size(), 4u);  // the values were not joined
    v1::PriceReply parsed;
    ASSERT_TRUE(parsed.ParseFromString(bytes));
    range = decoded.values.Range(950, 1100);
    EXPECT_EQ(range.ToString(), parsed.chunk().values().substr(950, 1100));
    EXPECT_EQ(decoded.values.Range(0, 0).pieces().size(), 0u);
  }
  // The reply and its buffer are gone; the range still reads its bytes.
  EXPECT_EQ(range.size(), 1100);
  EXPECT_EQ(range.ToString().size(), 1100u);
}

}  // namespace
}  // namespace pricer
