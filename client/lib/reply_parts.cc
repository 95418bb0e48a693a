#include "client/lib/reply_parts.h"

namespace pricer {
namespace {

// Entries [offset, offset + count) of a per-column array, when it has them.
template <typename T>
void CutTo(const google::protobuf::RepeatedField<T>& from, int64_t offset, int64_t count,
           google::protobuf::RepeatedField<T>* to) {
  if (from.size() < offset + count) return;
  to->Add(from.begin() + offset, from.begin() + offset + count);
}

void CutLevels(const google::protobuf::RepeatedPtrField<v1::LevelValues>& from, int64_t offset,
               int64_t count, google::protobuf::RepeatedPtrField<v1::LevelValues>* to) {
  for (const v1::LevelValues& level : from) {
    v1::LevelValues* part = to->Add();
    part->set_level(level.level());
    CutTo(level.values(), offset, count, part->mutable_values());
    CutTo(level.lower(), offset, count, part->mutable_lower());
    CutTo(level.upper(), offset, count, part->mutable_upper());
    CutTo(level.standard_error(), offset, count, part->mutable_standard_error());
  }
}

v1::ColumnStatistics CutStatistics(const v1::ColumnStatistics& from, int64_t offset,
                                   int64_t count) {
  v1::ColumnStatistics part;
  CutTo(from.mean(), offset, count, part.mutable_mean());
  CutTo(from.stddev(), offset, count, part.mutable_stddev());
  CutTo(from.min(), offset, count, part.mutable_min());
  CutTo(from.max(), offset, count, part.mutable_max());
  CutTo(from.v0(), offset, count, part.mutable_v0());
  CutLevels(from.quantiles(), offset, count, part.mutable_quantiles());
  CutLevels(from.var(), offset, count, part.mutable_var());
  CutLevels(from.es(), offset, count, part.mutable_es());
  CutTo(from.mean_standard_error(), offset, count, part.mutable_mean_standard_error());
  CutTo(from.stddev_standard_error(), offset, count, part.mutable_stddev_standard_error());
  CutTo(from.target_met(), offset, count, part.mutable_target_met());
  return part;
}

// Bytes [first, last) of `count` equal pieces, when `values` has them all.
ValueBytes CutValues(const ValueBytes& values, int64_t first, int64_t last, int64_t count) {
  if (values.empty() || count <= 0 || values.size() % count != 0) return ValueBytes();
  const int64_t piece = values.size() / count;
  return values.Range(first * piece, (last - first) * piece);
}

}  // namespace

ReceivedReply ChunkPart(const ReceivedReply& chunk, int64_t begin, int64_t end) {
  const v1::ResultChunk& whole = chunk.message.chunk();
  const int64_t offset = begin - whole.column_begin();
  ReceivedReply part;
  v1::ResultChunk* cut = part.message.mutable_chunk();
  cut->set_column_begin(begin);
  cut->set_column_end(end);
  cut->set_rows(whole.rows());
  if (whole.has_statistics()) {
    *cut->mutable_statistics() = CutStatistics(whole.statistics(), offset, end - begin);
  }
  const int64_t columns = whole.column_end() - whole.column_begin();
  part.values = CutValues(chunk.values, offset, offset + end - begin, columns);
  // The contributions' levels (their arrays apart) and their arrays' columns.
  *cut->mutable_contributions() = whole.contributions();
  for (const ContributionArrays& level : chunk.contributions) {
    ContributionArrays& into = part.contributions.emplace_back();
    for (const auto& [field, bytes] : level) {
      into[field] = CutValues(bytes, offset, offset + end - begin, columns);
    }
  }
  return part;
}

ReceivedReply PricesPart(const ReceivedReply& prices, int64_t begin, int64_t end) {
  const v1::TerminalPricesChunk& whole = prices.message.prices();
  const int64_t offset = begin - whole.issuer_begin();
  ReceivedReply part;
  v1::TerminalPricesChunk* cut = part.message.mutable_prices();
  cut->set_issuer_begin(begin);
  cut->set_issuer_end(end);
  cut->set_rows(whole.rows());
  part.values = CutValues(prices.values, offset, offset + end - begin,
                          whole.issuer_end() - whole.issuer_begin());
  return part;
}

ReceivedReply ValuesPart(const ReceivedReply& values, int64_t begin, int64_t end) {
  const v1::InstrumentValuesChunk& whole = values.message.values();
  const int64_t offset = begin - whole.instrument_begin();
  ReceivedReply part;
  v1::InstrumentValuesChunk* cut = part.message.mutable_values();
  cut->set_instrument_begin(begin);
  cut->set_instrument_end(end);
  cut->set_rows(whole.rows());
  part.values = CutValues(values.values, offset, offset + end - begin,
                          whole.instrument_end() - whole.instrument_begin());
  return part;
}

}  // namespace pricer
