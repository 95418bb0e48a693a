// Every PriceReply the service writes is built here: `accepted` from the
// admitted job, one reply per engine ResultChunk (bench/model_bench times
// it), and `finished` from the job's summary; and their bytes as gRPC sends
// them (EncodeReply), the values and contributions of a chunk not copied.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <vector>

#include "pricer/v1/pricer.pb.h"
#include "server/model/statistics.h"
#include "server/scheduler/engine.h"
#include "server/scheduler/job.h"
#include "server/scheduler/result_stream.h"
#include "server/store/scenario_store.h"

namespace pricer {

// Replaces `reply` with the reply for `chunk`: a `prices` chunk for terminal
// prices, a `round` when a targeted request's round starts, else a `chunk`
// with the SC values (when kept), the statistics of `selection` (the job's),
// levels in the order selected, and the contributions.
// Without `values`, the chunk's values and contributions are left out
// (EncodeReply appends them).
void ToReply(const ResultChunk& chunk, const StatisticsSelection& selection, v1::PriceReply* reply,
             bool values = true);

// The serialized reply for `chunk` (ToReply's message), with the
// contributions and then the values as the last fields of the inner message
// (protobuf takes fields in any order). Neither is copied: each array is a
// slice of the buffer that points into the chunk's shared floats and holds
// them until gRPC has sent it. `shared_slot` > 0: a chunk of SC whose values
// are in that slot of the call's shared-memory ring (1 + the slot;
// ResultChunk.shared_slot), its `values` left empty.
grpc::ByteBuffer EncodeReply(const ResultChunk& chunk, const StatisticsSelection& selection,
                             int32_t shared_slot = 0);
// Any other reply, serialized.
grpc::ByteBuffer EncodeReply(const v1::PriceReply& reply);

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
