// The client's decoding of a Price reply (client/lib/reply_decoding.h) on
// any bytes a server could send, cut into slices as gRPC might receive them:
// whatever it accepts, protobuf must parse to the same message, values and
// contributions.
#include <grpc/grpc.h>
#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "client/lib/reply_decoding.h"

// gRPC stays initialised between inputs (a client's channel keeps it so),
// not set up and torn down with each input's slices.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  grpc_init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first byte cuts the rest into slices: each bit a cut after 1/8 more.
  if (size == 0) return 0;
  const uint8_t cuts = data[0];
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<grpc::Slice> slices;
  size_t at = 0;
  for (int bit = 0; bit < 8; ++bit) {
    const size_t cut = bytes.size() * static_cast<size_t>(bit + 1) / 8;
    if ((cuts >> bit & 1) == 0 && bit < 7) continue;
    slices.emplace_back(bytes.data() + at, cut - at);
    at = cut;
  }
  const grpc::ByteBuffer buffer(slices.data(), slices.size());
  pricer::ReceivedReply decoded;
  if (!pricer::DecodeReply(buffer, &decoded).ok()) return 0;

  pricer::v1::PriceReply parsed;
  if (!parsed.ParseFromString(bytes)) std::abort();
  std::string values;
  if (parsed.has_chunk()) {
    values = parsed.chunk().values();
    parsed.mutable_chunk()->clear_values();
  }
  if (parsed.has_prices()) {
    values = parsed.prices().values();
    parsed.mutable_prices()->clear_values();
  }
  if (parsed.has_values()) {
    values = parsed.values().values();
    parsed.mutable_values()->clear_values();
  }
  // A chunk's contributions' arrays, level by level.
  const int levels = parsed.has_chunk() ? parsed.chunk().contributions_size() : 0;
  if (std::ssize(decoded.contributions) != levels) std::abort();
  for (int l = 0; l < levels; ++l) {
    pricer::v1::Contributions* level = parsed.mutable_chunk()->mutable_contributions(l);
    const pricer::ContributionArrays& arrays = decoded.contributions[static_cast<size_t>(l)];
    const google::protobuf::Reflection* reflection = level->GetReflection();
    for (int i = 0; i < level->GetDescriptor()->field_count(); ++i) {
      const google::protobuf::FieldDescriptor* f = level->GetDescriptor()->field(i);
      if (f->type() != google::protobuf::FieldDescriptor::TYPE_BYTES) continue;
      const auto found = arrays.find(f->number());
      if ((found == arrays.end() ? "" : found->second.ToString()) !=
          reflection->GetString(*level, f)) {
        std::abort();
      }
      reflection->ClearField(level, f);
    }
  }
  // Compared serialised: a NaN is not equal to itself, its bytes are.
  if (parsed.SerializeAsString() != decoded.message.SerializeAsString()) std::abort();
  if (decoded.values.ToString() != values) std::abort();
  return 0;
}
