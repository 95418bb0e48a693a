#include "client/lib/reply_decoding.h"

#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace pricer {

namespace {

constexpr uint64_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;
constexpr uint64_t kMaxFieldNumber = (uint64_t{1} << 29) - 1;

// Reads the wire format across the pieces of a received buffer.
class Cursor {
 public:
  explicit Cursor(std::vector<std::string_view> pieces) : pieces_(std::move(pieces)) {
    for (std::string_view piece : pieces_) total_ += static_cast<int64_t>(piece.size());
  }

  int64_t position() const { return position_; }
  int64_t total() const { return total_; }
  bool AtEnd() const { return position_ == total_; }

  // Appends the bytes read to `raw` when it is given.
  bool ReadVarint(uint64_t* value, std::string* raw = nullptr) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (AtEnd()) return false;
      const auto byte = static_cast<uint8_t>(Current()[0]);
      if (raw != nullptr) raw->push_back(static_cast<char>(byte));
      Advance(1);
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *value = result;
        return true;
      }
    }
    return false;
  }

  // Bytes left before `end`: none when already past it.
  int64_t Left(int64_t end) const { return std::max<int64_t>(0, end - position_); }

  // A length that ends by `end`, and so do the bytes it counts. Within
  // protobuf's own limits for a length, or it would refuse what this
  // accepts: at most 5 bytes (an overlong 0 of 6 bytes was accepted here
  // once: fuzz_price_reply) and under 2^31 - 16 (its ReadSize).
  bool ReadLength(int64_t end, uint64_t* length, std::string* raw = nullptr) {
    const int64_t start = position_;
    return ReadVarint(length, raw) && position_ - start <= 5 &&
           *length <= static_cast<uint64_t>(INT32_MAX - 16) && position_ <= end &&
           *length <= static_cast<uint64_t>(end - position_);
  }

  // Moves `length` bytes on (at most those left), appending them to `copy`
  // when it is given and their pieces to `pieces` when it is.
  void Take(int64_t length, std::string* copy, std::vector<std::string_view>* pieces) {
    length = std::min(length, total_ - position_);
    while (length > 0) {
      const std::string_view here = Current();
      const auto n =
          static_cast<size_t>(std::min<int64_t>(length, static_cast<int64_t>(here.size())));
      if (copy != nullptr) copy->append(here.data(), n);
      if (pieces != nullptr) pieces->push_back(here.substr(0, n));
      Advance(static_cast<int64_t>(n));
      length -= static_cast<int64_t>(n);
    }
  }

 private:
  // The rest of the current piece; not empty unless at the end.
  std::string_view Current() {
    while (piece_ < pieces_.size() && offset_ == pieces_[piece_].size()) {
      ++piece_;
      offset_ = 0;
    }
    return piece_ < pieces_.size() ? pieces_[piece_].substr(offset_) : std::string_view();
  }
  void Advance(int64_t n) {
    offset_ += static_cast<size_t>(n);
    position_ += n;
  }

  std::vector<std::string_view> pieces_;
  size_t piece_ = 0;
  size_t offset_ = 0;
  int64_t position_ = 0;
  int64_t total_ = 0;
};

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// Reads a field's tag, keeping its bytes in `raw`: protobuf's own limits
// hold (a field number from 1 to 2^29 - 1 in at most 5 bytes).
bool ReadTag(Cursor& in, uint64_t* tag, std::string* raw) {
  raw->clear();
  return in.ReadVarint(tag, raw) && raw->size() <= 5 && *tag >> 3 >= 1 &&
         *tag >> 3 <= kMaxFieldNumber;
}

// Copies the field of `tag` (already read, its bytes in `raw_tag`) to `out`
// as it came; the field must end by `end`.
bool CopyField(uint64_t tag, const std::string& raw_tag, int64_t end, Cursor& in,
               std::string* out) {
  out->append(raw_tag);
  uint64_t value = 0;
  switch (tag & 7) {
    case kVarint:
      return in.ReadVarint(&value, out) && in.position() <= end;
    case kFixed64:
    case kFixed32: {
      const int64_t width = (tag & 7) == kFixed64 ? 8 : 4;
      if (in.Left(end) < width) return false;
      in.Take(width, out, nullptr);
      return true;
    }
    case kLengthDelimited:
      if (!in.ReadLength(end, &value, out)) return false;
      in.Take(static_cast<int64_t>(value), out, nullptr);
      return true;
    default:  // groups: not in this protocol
      return false;
  }
}

// The field number of `values` in the reply field `field`, or 0 when that
// field carries none.
int ValuesFieldOf(uint64_t field) {
  if (field == v1::PriceReply::kChunkFieldNumber) return v1::ResultChunk::kValuesFieldNumber;
  if (field == v1::PriceReply::kPricesFieldNumber) {
    return v1::TerminalPricesChunk::kValuesFieldNumber;
  }
  if (field == v1::PriceReply::kValuesFieldNumber) {
    return v1::InstrumentValuesChunk::kValuesFieldNumber;
  }
  return 0;
}

bool InOneof(uint64_t field) {
  return field == v1::PriceReply::kAcceptedFieldNumber ||
         field == v1::PriceReply::kChunkFieldNumber ||
         field == v1::PriceReply::kPricesFieldNumber ||
         field == v1::PriceReply::kValuesFieldNumber ||
         field == v1::PriceReply::kFinishedFieldNumber ||
         field == v1::PriceReply::kRoundFieldNumber;
}

absl::Status NotAReply(int64_t position) {
  return absl::InvalidArgumentError(
      absl::StrCat("the server sent a reply that is not a PriceReply (at byte ", position, ")"));
}

}  // namespace

ValueBytes ValueBytes::Range(int64_t offset, int64_t length) const {
  ValueBytes range;
  range.slices_ = slices_;
  range.size_ = length;
  range.pieces_ = PiecesRange(pieces_, offset, length);
  return range;
}

void ValueBytes::CopyTo(char* out) const { CopyPieces(pieces_, out); }

std::string ValueBytes::ToString() const {
  std::string text(static_cast<size_t>(size_), '\0');
  CopyTo(text.data());
  return text;
}

namespace {

using Slices = std::shared_ptr<const std::vector<grpc::Slice>>;

// The bytes of a length-delimited field whose tag was read, ending by `end`,
// uncopied.
bool TakeBytes(Cursor& in, int64_t end, const Slices& slices, ValueBytes* bytes) {
  uint64_t size = 0;
  if (!in.ReadLength(end, &size)) return false;
  BytePieces pieces;
  in.Take(static_cast<int64_t>(size), nullptr, &pieces);
  *bytes = ValueBytes(slices, std::move(pieces));
  return true;
}

// A field of `length` bytes: its tag (`raw_tag`), length and `bytes`.
void AppendField(const std::string& raw_tag, const std::string& bytes, std::string* out) {
  *out += raw_tag;
  AppendVarint(bytes.size(), out);
  *out += bytes;
}

// The rest of a message field (its tag `raw_tag` read) that ends by `end`:
// its length-delimited fields that `array(field number)` names go to
// `arrays[field number]` uncopied; `nested(field number, ...)` reads those it
// takes (nullopt for the others; else whether they were well formed); the
// others are copied to `out` as the field, its length counting only them.
template <typename IsArray, typename Nested>
bool DecodeMessage(Cursor& in, int64_t end, const std::string& raw_tag, const Slices& slices,
                   IsArray array, Nested nested, std::map<int, ValueBytes>* arrays,
                   std::string* out) {
  uint64_t length = 0;
  if (!in.ReadLength(end, &length)) return false;
  const int64_t message_end = in.position() + static_cast<int64_t>(length);
  std::string inner, tag_bytes;
  while (in.position() < message_end) {
    uint64_t tag = 0;  // a tag that runs past the end is refused
    if (!ReadTag(in, &tag, &tag_bytes) || in.position() > message_end) return false;
    const auto field = static_cast<int>(tag >> 3);
    const bool delimited = (tag & 7) == kLengthDelimited;
    if (delimited && array(field)) {
      if (!TakeBytes(in, message_end, slices, &(*arrays)[field])) return false;
      continue;
    }
    if (delimited) {
      if (const std::optional<bool> taken = nested(field, in, message_end, tag_bytes, &inner)) {
        if (!*taken) return false;
        continue;
      }
    }
    if (!CopyField(tag, tag_bytes, message_end, in, &inner)) return false;
  }
  AppendField(raw_tag, inner, out);
  return true;
}

// The bytes fields of a v1::Contributions (its descriptor's): its arrays.
bool IsContributionArray(int field) {
  const google::protobuf::FieldDescriptor* f =
      v1::Contributions::descriptor()->FindFieldByNumber(field);
  return f != nullptr && f->type() == google::protobuf::FieldDescriptor::TYPE_BYTES;
}

// Nothing is nested in the message.
std::optional<bool> NoneNested(int, Cursor&, int64_t, const std::string&, std::string*) {
  return std::nullopt;
}

// A oneof member of the reply (its tag `raw_tag` read) whose values are
// field `values_field`: those values, and a chunk's contributions' arrays,
// into `reply`, the rest copied to `rest`.
bool DecodeMember(Cursor& in, const std::string& raw_tag, bool chunk, int values_field,
                  const Slices& slices, std::string* rest, ReceivedReply* reply) {
  // A chunk's contributions, their arrays apart.
  auto contributions = [&](int field, Cursor& cursor, int64_t end, const std::string& tag,
                           std::string* out) -> std::optional<bool> {
    if (!chunk || field != v1::ResultChunk::kContributionsFieldNumber) return std::nullopt;
    return DecodeMessage(cursor, end, tag, slices, IsContributionArray, NoneNested,
                         &reply->contributions.emplace_back(), out);
  };
  std::map<int, ValueBytes> values;
  if (!DecodeMessage(
          in, in.total(), raw_tag, slices, [&](int field) { return field == values_field; },
          contributions, &values, rest)) {
    return false;
  }
  if (values.count(values_field) > 0) reply->values = values[values_field];
  return true;
}

}  // namespace

ValueBytes::ValueBytes(std::shared_ptr<const std::vector<grpc::Slice>> slices, BytePieces pieces)
    : slices_(std::move(slices)), pieces_(std::move(pieces)), size_(PiecesSize(pieces_)) {}

absl::Status DecodeReply(const grpc::ByteBuffer& buffer, ReceivedReply* reply) {
  auto slices = std::make_shared<std::vector<grpc::Slice>>();
  if (!buffer.Valid() || !buffer.Dump(slices.get()).ok()) return NotAReply(0);
  std::vector<std::string_view> all;
  for (const grpc::Slice& slice : *slices) {
    all.emplace_back(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  Cursor in(std::move(all));
  std::string rest;  // the reply without its arrays, for protobuf to parse
  ReceivedReply decoded;
  uint64_t owner = 0;  // the oneof field whose arrays `decoded` holds
  std::string raw_tag;
  while (!in.AtEnd()) {
    uint64_t tag = 0;
    if (!ReadTag(in, &tag, &raw_tag)) return NotAReply(in.position());
    const uint64_t field = tag >> 3;
    const bool message = (tag & 7) == kLengthDelimited;
    // Another member of the oneof replaces the one before, arrays and all.
    if (message && InOneof(field) && field != owner) {
      decoded.values = ValueBytes();
      decoded.contributions.clear();
      owner = field;
    }
    const int values_field = message ? ValuesFieldOf(field) : 0;
    if (values_field == 0) {
      if (!CopyField(tag, raw_tag, in.total(), in, &rest)) return NotAReply(in.position());
    } else if (!DecodeMember(in, raw_tag, field == v1::PriceReply::kChunkFieldNumber, values_field,
                             slices, &rest, &decoded)) {
      return NotAReply(in.position());
    }
  }
  if (!decoded.message.ParseFromString(rest)) return NotAReply(in.position());
  *reply = std::move(decoded);
  return absl::OkStatus();
}

}  // namespace pricer
