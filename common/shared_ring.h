// The layout of a shared-memory output ring (pricer.proto's
// SharedMemoryRing), which the client creates and the server writes into,
// and the futex calls on its `released` word, for both sides.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <ctime>

#include "pricer/v1/client_protocol.pb.h"

namespace pricer::shared_ring {

// The layout's numbers: client_protocol.proto's SharedRingLayout, which the
// Python client reads too.
inline const v1::SharedRingLayout& Layout() { return v1::SharedRingLayout::default_instance(); }

inline int64_t FileBytes(int64_t slots, int64_t slot_bytes) {
  return Layout().header_bytes() + slots * slot_bytes;
}

// Where in its slot the values of a chunk whose first column is `column`
// start, for `phase` (SharedMemoryRing.phase).
inline int64_t ValuesOffset(int64_t phase, int64_t rows, int64_t column) {
  return (phase + 4 * rows * column) % Layout().slot_alignment();
}

// The `released` word of a mapped ring.
inline std::atomic_ref<uint32_t> Released(char* base) {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(base + Layout().released_offset()));
}

// Wakes whoever waits for `released` to change (shared, not private: the
// waiter is another process).
inline void WakeReleased(char* base) {
  syscall(SYS_futex, base + Layout().released_offset(), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

// Waits until `released` is no longer `seen`, a wake-up, or `timeout_ms`.
inline void WaitReleased(char* base, uint32_t seen, int timeout_ms) {
  const timespec timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  syscall(SYS_futex, base + Layout().released_offset(), FUTEX_WAIT, seen, &timeout, nullptr, 0);
}

}  // namespace pricer::shared_ring
