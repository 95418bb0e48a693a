#include "server/backends/cuda/scoped_device.h"

#include <cuda_runtime_api.h>

#include "server/backends/cuda/cuda_status.h"

namespace pricer {

ScopedDevice::ScopedDevice(int ordinal, absl::string_view device) {
  int previous = -1;
  // Without a usable driver this fails too; cudaSetDevice below says why,
  // and there is nothing to restore.
  const bool known = cudaGetDevice(&previous) == cudaSuccess;
  if (!known) (void)cudaGetLastError();
  // Always called, even when `ordinal` is current already: it is where the
  // runtime makes the device's context, and where a lost GPU first shows.
  status_ = PRICER_CUDA_STATUS(device, cudaSetDevice(ordinal));
  if (known && status_.ok() && previous != ordinal) previous_ = previous;
}

ScopedDevice::~ScopedDevice() {
  if (previous_ < 0) return;
  // A failure here belongs to the previous device: its next call reports it.
  if (cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace pricer
