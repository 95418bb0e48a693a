// A Price reply as gRPC received it, decoded without copying its arrays:
// the message's small fields are parsed, while the values of a chunk (SC,
// terminal prices or instrument values) and its contributions stay where
// gRPC put them, in the slices of the received buffer, so that they go from
// there to a file without an intermediate copy.
// Protobuf cannot parse a `bytes` field by reference (Debian's 3.21 copies
// every `bytes` field into a std::string), so the few lines of wire format
// that find the values are here.
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "client/lib/byte_pieces.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

// Bytes in pieces that live in shared, reference-counted slices: copying a
// ValueBytes or cutting a range of it copies no byte.
class ValueBytes {
 public:
  ValueBytes() = default;
  // `pieces`, which lie in `slices`; with no slices, in memory that their
  // user keeps valid while it uses them (a shared-memory slot, until its
  // release: SharedOutputReader::Take).
  ValueBytes(std::shared_ptr<const std::vector<grpc::Slice>> slices, BytePieces pieces);

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // In order; their lengths add up to size().
  const BytePieces& pieces() const { return pieces_; }
  // Bytes [offset, offset + length), which must lie inside.
  ValueBytes Range(int64_t offset, int64_t length) const;
  // Copies the bytes to `out` (size() bytes).
  void CopyTo(char* out) const;
  std::string ToString() const;

 private:
  std::shared_ptr<const std::vector<grpc::Slice>> slices_;  // keeps the pieces alive
  BytePieces pieces_;
  int64_t size_ = 0;
};

// The arrays of one contributed level of a chunk (a v1::Contributions' bytes
// fields: values, standard_errors, delta, ...), by field number.
using ContributionArrays = std::map<int, ValueBytes>;

struct ReceivedReply {
  // The reply, with the `values` of its chunk or path-matrix chunk empty,
  // and the arrays of its chunk's contributions.
  v1::PriceReply message;
  // Those values (empty for other replies).
  ValueBytes values;
  // Those arrays, a ContributionArrays per level (message.chunk()'s
  // contributions, in their order).
  std::vector<ContributionArrays> contributions;
};

// Decodes a serialized PriceReply; fails (INVALID_ARGUMENT) when the bytes are
// not one. The fields may come in any order; a `values` field (or an array
// of a contributed level) given twice keeps the last, as protobuf does.
absl::Status DecodeReply(const grpc::ByteBuffer& buffer, ReceivedReply* reply);

}  // namespace pricer
