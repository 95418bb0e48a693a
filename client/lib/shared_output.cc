#include "client/lib/shared_output.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/shared_ring.h"

namespace pricer {
namespace {

using namespace shared_ring;  // NOLINT(build/namespaces): the layout's names

absl::Status Failed(absl::string_view what) {
  return absl::FailedPreconditionError(
      absl::StrCat("cannot set up the shared-memory ring: ", what, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedOutputReader>> SharedOutputReader::Create(int32_t slots,
                                                                               int32_t phase) {
  const v1::SharedRingLayout& layout = Layout();
  if (slots < 1 || slots > layout.max_slots() || phase < 0 || phase >= layout.slot_alignment()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a shared-memory ring of ", slots, " slots (1 to ", layout.max_slots(),
                     ") and phase ", phase, " (0 to ", layout.slot_alignment() - 1, ")"));
  }
  const int fd = memfd_create("pricer-output", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Failed("memfd_create");
  const int64_t bytes = FileBytes(slots, layout.min_slot_bytes());
  // Its size fixed, the server's writes into it cannot fault (SIGBUS).
  if (ftruncate(fd, bytes) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const absl::Status status = Failed("memfd size and seals");
    close(fd);
    return status;
  }
  void* mapped = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_POPULATE, fd, 0);
  if (mapped == MAP_FAILED) {
    const absl::Status status = Failed("mmap");
    close(fd);
    return status;
  }
  std::unique_ptr<SharedOutputReader> reader(
      new SharedOutputReader(fd, static_cast<char*>(mapped), bytes));
  std::string token(static_cast<size_t>(layout.token_bytes()), '\0');
  if (getrandom(token.data(), token.size(), 0) != std::ssize(token)) return Failed("getrandom");
  std::memcpy(reader->base_, layout.magic().data(), layout.magic().size());
  std::memcpy(reader->base_ + layout.token_offset(), token.data(), token.size());
  v1::SharedMemoryRing& ring = reader->ring_;
  ring.set_pid(static_cast<int32_t>(getpid()));
  ring.set_fd(fd);
  ring.set_slots(slots);
  ring.set_slot_bytes(layout.min_slot_bytes());
  ring.set_token(std::move(token));
  ring.set_phase(phase);
  return reader;
}

SharedOutputReader::~SharedOutputReader() {
  munmap(base_, static_cast<size_t>(bytes_));
  close(fd_);
}

absl::StatusOr<ValueBytes> SharedOutputReader::Take(int32_t shared_slot, int64_t rows,
                                                    int64_t column, int64_t columns) {
  const int64_t next = taken_ % ring_.slots();
  if (shared_slot - 1 != next) {
    return absl::InternalError(absl::StrCat("a chunk in shared-memory slot ", shared_slot - 1,
                                            " where slot ", next, " was next"));
  }
  // Each factor at most a slot, so that the product cannot overflow.
  const int64_t slot_bytes = ring_.slot_bytes();
  const bool fits =
      rows >= 0 && rows <= slot_bytes && columns >= 0 && columns <= slot_bytes && column >= 0;
  const int64_t bytes = fits ? 4 * rows * columns : 0;
  const int64_t offset = fits ? ValuesOffset(ring_.phase(), rows, column) : 0;
  if (!fits || offset + bytes > slot_bytes) {
    return absl::InternalError(absl::StrCat("a chunk of ", columns, " columns of ", rows,
                                            " rows in a shared-memory slot of ", slot_bytes,
                                            " bytes"));
  }
  ++taken_;
  const char* values = base_ + Layout().header_bytes() + next * slot_bytes + offset;
  return ValueBytes(nullptr, {std::string_view(values, static_cast<size_t>(bytes))});
}

void SharedOutputReader::Release() {
  Released(base_).fetch_add(1, std::memory_order_release);
  WakeReleased(base_);
}

}  // namespace pricer
