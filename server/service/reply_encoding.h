// How an engine ResultChunk becomes the PriceReply that carries it: the
// service writes one per chunk, and bench/model_bench times it.
#pragma once

#include "pricer/v1/pricer.pb.h"
#include "server/model/statistics.h"
#include "server/scheduler/result_stream.h"

namespace pricer {

// Replaces `reply` with the reply for `chunk`: a `prices` chunk for terminal
// prices, else a `chunk` with the SC values (when kept) and the statistics
// of `selection` (the job's), levels in the order selected.
void ToReply(const ResultChunk& chunk, const StatisticsSelection& selection, v1::PriceReply* reply);

}  // namespace pricer
