// Where a GPU's BlockPool (server/scheduler/block_pool.h) takes its blocks:
// page-locked host memory, which the GPU copies to and from asynchronously.
#pragma once

#include <string>

#include "server/scheduler/block_pool.h"

namespace pricer {

// Page-locked memory for GPU `ordinal` (named `device` in errors):
// cudaHostAlloc, and cudaFreeHost with that GPU current (a gRPC thread
// dropping the last chunk has none: not the runtime's default device 0).
BlockMemory CudaPinnedMemory(int ordinal, std::string device);

}  // namespace pricer
