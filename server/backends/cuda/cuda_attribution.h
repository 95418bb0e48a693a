// The cuda backend's Euler contributions and sensitivities
// (server/model/attribution.h, kernels in attribution_kernels.cu): what a job
// keeps on its GPU for them (CudaJobBuffers::Attribution's resident
// entries), built with its paths, and the steps of a shard, after its
// statistics: each kept column's band of paths, the gathers, the issuers'
// sums, then the results block to the host and into the shard's statistics.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "server/backends/cuda/cuda_array.h"
#include "server/backends/cuda/cuda_device.h"
#include "server/backends/cuda/cuda_shard_run.h"
#include "server/backends/cuda/cuda_shard_slot.h"
#include "server/model/instruments.h"
#include "server/model/job_spec.h"

namespace pricer {

// A job's resident arrays for its contributions (empty without them).
struct AttributionArrays {
  DeviceArray<float> by_path, delta, vega, dst;
  DeviceArray<double> sigma_t, derivatives_today, spot;
  DeviceArray<InstrumentTerms> terms;
  DeviceArray<int32_t> issuer_offsets, issuer_rows;

  // As the shards read them; `rows`: A's.
  ResidentAttribution Resident(int64_t rows) const;
};

// Under GBM with vega: a copy of the shocks in `st` (before ST is built
// from them in place), for dST/dsigma.
absl::Status KeepShocks(const JobSpec& spec, const CudaJobBuffers& buffers,
                        const std::string& device, MemoryAccount& memory, const float* st,
                        cudaStream_t stream, AttributionArrays* out);
// Once ST (`st`) and X (`x`) are built: X row-major and, with delta or vega,
// the rows' derivatives row-major and what their gathers read.
absl::Status BuildAttribution(const JobSpec& spec, const CudaJobBuffers& buffers,
                              const std::string& device, MemoryAccount& memory, const float* st,
                              const float* x, cudaStream_t stream, AttributionArrays* out);

// The contributions and sensitivities of a shard's `kept` columns (SC at
// `kept_sc`, their positions at `positions`) on the slot's compute stream,
// then its results block to the slot's pinned copy.
absl::Status AttributeShard(const ResidentJob& job, ShardSlot& slot, const float* kept_sc,
                            const float* positions, int64_t kept, double discount);
// From the slot's pinned copy into `out` (sized for `kept` columns), once the
// shard's streams have drained.
void CopyAttribution(const ResidentJob& job, const ShardSlot& slot, int64_t kept,
                     ColumnStatistics& out);

}  // namespace pricer
