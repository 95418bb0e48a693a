// Every PriceReply the service writes is built here: `accepted` from the
// admitted job, one reply per engine ResultChunk (bench/model_bench times
// it), and `finished` from the job's summary.
#pragma once

#include <vector>

#include "pricer/v1/pricer.pb.h"
#include "server/model/statistics.h"
#include "server/scheduler/engine.h"
#include "server/scheduler/job.h"
#include "server/scheduler/result_stream.h"
#include "server/store/scenario_store.h"

namespace pricer {

// Replaces `reply` with the reply for `chunk`: a `prices` chunk for terminal
// prices, else a `chunk` with the SC values (when kept) and the statistics
// of `selection` (the job's), levels in the order selected.
void ToReply(const ResultChunk& chunk, const StatisticsSelection& selection, v1::PriceReply* reply);

// Replaces `reply` with `accepted`: the job's id, plan and resolved sizes.
void ToAcceptedReply(const Job& job, v1::PriceReply* reply);
// Replaces `reply` with `finished`: the job's summary.
void ToFinishedReply(const JobSummary& summary, v1::PriceReply* reply);

// The reply of an upload: the stored set's id and shape.
void ToScenarioSetReply(const StoredSet& stored, v1::ScenarioSet* reply);
// The devices and the engine's queue (ListDevices).
void ToListDevicesReply(const std::vector<DeviceStatus>& devices, const EngineStatus& engine,
                        int64_t max_queued_jobs, v1::ListDevicesReply* reply);

}  // namespace pricer
