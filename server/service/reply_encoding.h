// Every PriceReply the service writes is built here: `accepted` from the
// admitted job, one reply per engine ResultChunk (bench/model_bench times
// it), and `finished` from the job's summary.
#pragma once

#include "pricer/v1/pricer.pb.h"
#include "server/model/statistics.h"
#include "server/scheduler/job.h"
#include "server/scheduler/result_stream.h"

namespace pricer {

// Replaces `reply` with the reply for `chunk`: a `prices` chunk for terminal
// prices, else a `chunk` with the SC values (when kept) and the statistics
// of `selection` (the job's), levels in the order selected.
void ToReply(const ResultChunk& chunk, const StatisticsSelection& selection, v1::PriceReply* reply);

// Replaces `reply` with `accepted`: the job's id, plan and resolved sizes.
void ToAcceptedReply(const Job& job, v1::PriceReply* reply);
// Replaces `reply` with `finished`: the job's summary.
void ToFinishedReply(const JobSummary& summary, v1::PriceReply* reply);

}  // namespace pricer
