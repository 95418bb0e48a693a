// The part of a received chunk that a call still needs: a retried call (or
// one over a span, with a precision target) may send columns, or issuers of
// the terminal prices or instruments of a book's values, that have arrived
// already; the client hands on only
// the others, cut out of the reply without copying its values.
#pragma once

#include <cstdint>

#include "client/lib/reply_decoding.h"

namespace pricer {

// Columns [begin, end), inside those of `chunk` (a `chunk` reply): its
// values and each per-column array of its statistics cut to them (an array
// shorter than the chunk's columns stays empty, for the caller to refuse).
ReceivedReply ChunkPart(const ReceivedReply& chunk, int64_t begin, int64_t end);

// Issuers [begin, end), inside those of `prices` (a `prices` reply).
ReceivedReply PricesPart(const ReceivedReply& prices, int64_t begin, int64_t end);

// Instruments [begin, end), inside those of `values` (a `values` reply).
ReceivedReply ValuesPart(const ReceivedReply& values, int64_t begin, int64_t end);

}  // namespace pricer
