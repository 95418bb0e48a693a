#include "server/backends/cuda/scoped_device.h"

#include <cuda_runtime_api.h>

#include "server/backends/cuda/cuda_status.h"

namespace pricer {
namespace {

// The GPU a ScopedDevice made current on this thread; -1 when none has. A
// scope restores only such a device: a fresh thread's current device is the
// runtime's default, 0, and making it current again would create a context
// on GPU 0 (hundreds of MiB) in a server given cuda:1 only.
thread_local int current_on_thread = -1;

}  // namespace

ScopedDevice::ScopedDevice(int ordinal, absl::string_view device)
    : ordinal_(ordinal), previous_(current_on_thread) {
  // Always called, even when `ordinal` is current already: it is where the
  // runtime makes the device's context, and where a lost GPU first shows.
  status_ = PRICER_CUDA_STATUS(device, cudaSetDevice(ordinal));
  if (status_.ok()) current_on_thread = ordinal;
}

ScopedDevice::~ScopedDevice() {
  if (!status_.ok()) return;  // nothing changed
  current_on_thread = previous_;
  if (previous_ < 0 || previous_ == ordinal_) return;
  // A failure here belongs to the previous device: its next call reports it.
  if (cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace pricer
