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

namespace pricer::shared_ring {

inline constexpr char kMagic[8] = {'P', 'R', 'I', 'C', 'E', 'R', 'R', 'G'};
inline constexpr int64_t kTokenOffset = 8;
inline constexpr int64_t kTokenBytes = 16;
inline constexpr int64_t kReleasedOffset = 64;
inline constexpr int64_t kHeaderBytes = 4096;  // slot 0 starts here
inline constexpr int64_t kSlotAlignment = 4096;
// The smallest slot, which holds the largest chunk (4 MiB - 64 KiB,
// kMaxChunkPayloadBytes) at any phase: the slot the C++ client uses.
inline constexpr int64_t kMinSlotBytes = int64_t{4} << 20;
inline constexpr int32_t kMaxSlots = 1024;
inline constexpr int64_t kMaxSlotBytes = int64_t{1} << 30;

inline int64_t FileBytes(int64_t slots, int64_t slot_bytes) {
  return kHeaderBytes + slots * slot_bytes;
}

// Where in its slot the values of a chunk whose first column is `column`
// start, for `phase` (SharedMemoryRing.phase).
inline int64_t ValuesOffset(int64_t phase, int64_t rows, int64_t column) {
  return (phase + 4 * rows * column) % kSlotAlignment;
}

// The `released` word of a mapped ring.
inline std::atomic_ref<uint32_t> Released(char* base) {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(base + kReleasedOffset));
}

// Wakes whoever waits for `released` to change (shared, not private: the
// waiter is another process).
inline void WakeReleased(char* base) {
  syscall(SYS_futex, base + kReleasedOffset, FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

// Waits until `released` is no longer `seen`, a wake-up, or `timeout_ms`.
inline void WaitReleased(char* base, uint32_t seen, int timeout_ms) {
  const timespec timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  syscall(SYS_futex, base + kReleasedOffset, FUTEX_WAIT, seen, &timeout, nullptr, 0);
}

}  // namespace pricer::shared_ring
