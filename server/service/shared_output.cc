#include "server/service/shared_output.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/shared_ring.h"
#include "common/status_macros.h"
#include "server/service/field_checks.h"

namespace pricer {
namespace {

using namespace shared_ring;  // NOLINT(build/namespaces): the layout's names

// The file `fd` names is not what `rule` asks for.
absl::Status BadFile(const v1::SharedMemoryRing& ring, const std::string& path,
                     absl::string_view rule) {
  return Invalid("output.shared_memory.fd", ring.fd(), absl::StrCat(rule, " (", path, ")"));
}

absl::Status CheckShape(const v1::SharedMemoryRing& ring) {
  RETURN_IF_ERROR(CheckRange("output.shared_memory.pid", ring.pid(), 1, INT32_MAX));
  RETURN_IF_ERROR(CheckRange("output.shared_memory.fd", ring.fd(), 0, INT32_MAX));
  const v1::SharedRingLayout& layout = Layout();
  RETURN_IF_ERROR(
      CheckRange("output.shared_memory.slots", ring.slots(), 1, int64_t{layout.max_slots()}));
  if (ring.slot_bytes() < layout.min_slot_bytes() || ring.slot_bytes() > layout.max_slot_bytes() ||
      ring.slot_bytes() % layout.slot_alignment() != 0) {
    return Invalid("output.shared_memory.slot_bytes", ring.slot_bytes(),
                   absl::StrCat("must be a multiple of ", layout.slot_alignment(), " in [",
                                layout.min_slot_bytes(), ", ", layout.max_slot_bytes(), "]"));
  }
  RETURN_IF_ERROR(CheckRange("output.shared_memory.phase", ring.phase(), 0,
                             int64_t{layout.slot_alignment() - 1}));
  if (std::ssize(ring.token()) != layout.token_bytes()) {
    return Invalid("output.shared_memory.token size", ring.token().size(),
                   absl::StrCat("must be ", layout.token_bytes(), " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedOutputWriter>> OpenRequestedRing(
    const v1::OutputOptions& output, bool allowed) {
  if (!output.has_shared_memory()) return nullptr;
  if (!allowed) {
    absl::Status status = absl::FailedPreconditionError(
        "output.shared_memory: this server does not write results into shared memory (start it "
        "with --shared-memory-output, on the client's host)");
    status.SetPayload(kFieldPayload, absl::Cord("output.shared_memory"));
    return status;
  }
  if (!output.full()) {
    return Invalid("output.shared_memory", std::string("set"),
                   "needs output.full: the ring carries SC's values");
  }
  return SharedOutputWriter::Open(output.shared_memory());
}

absl::StatusOr<std::unique_ptr<SharedOutputWriter>> SharedOutputWriter::Open(
    const v1::SharedMemoryRing& ring) {
  RETURN_IF_ERROR(CheckShape(ring));
  const std::string path = absl::StrCat("/proc/", ring.pid(), "/fd/", ring.fd());
  // Only a regular file is opened: opening a device or a FIFO could act.
  struct stat file {};
  if (stat(path.c_str(), &file) != 0) {
    return BadFile(ring, path,
                   absl::StrCat("cannot be found: ", std::strerror(errno),
                                "; the ring must be a descriptor of a process on the server's "
                                "host that the server's user may open"));
  }
  if (!S_ISREG(file.st_mode)) return BadFile(ring, path, "is not a memfd");
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return BadFile(ring, path, absl::StrCat("cannot be opened: ", std::strerror(errno)));
  absl::Cleanup close_fd = [fd] { close(fd); };
  // Sealed against shrinking, the file keeps every page the server writes:
  // a client cannot make those writes fault (SIGBUS) by truncating it.
  const int seals = fcntl(fd, F_GET_SEALS);
  if (fstat(fd, &file) != 0 || !S_ISREG(file.st_mode) || seals < 0 ||
      (seals & F_SEAL_SHRINK) == 0) {
    return BadFile(ring, path, "is not a memfd sealed against shrinking (F_SEAL_SHRINK)");
  }
  const int64_t bytes = FileBytes(ring.slots(), ring.slot_bytes());
  if (file.st_size < bytes) {
    return BadFile(ring, path,
                   absl::StrCat("has ", file.st_size, " bytes, fewer than the ", bytes,
                                " of its header and ", ring.slots(), " slots"));
  }
  void* mapped =
      mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) {
    return BadFile(ring, path, absl::StrCat("cannot be mapped: ", std::strerror(errno)));
  }
  std::unique_ptr<SharedOutputWriter> writer(
      new SharedOutputWriter(static_cast<char*>(mapped), bytes, ring));
  const std::string& magic = Layout().magic();
  if (std::memcmp(mapped, magic.data(), magic.size()) != 0 ||
      std::memcmp(static_cast<char*>(mapped) + Layout().token_offset(), ring.token().data(),
                  ring.token().size()) != 0) {
    return Invalid("output.shared_memory.token", std::string("(not shown)"),
                   absl::StrCat("is not the one in the header of the ring ", path));
  }
  return writer;
}

SharedOutputWriter::~SharedOutputWriter() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  WakeReleased(base_);
  if (waiter_.joinable()) waiter_.join();
  munmap(base_, static_cast<size_t>(bytes_));
}

bool SharedOutputWriter::NextFree() const {
  const uint32_t released = Released(base_).load(std::memory_order_acquire);
  return static_cast<uint32_t>(written_) - released < static_cast<uint32_t>(slots_);
}

absl::StatusOr<int32_t> SharedOutputWriter::TryWrite(const SharedFloats& values, int64_t rows,
                                                     int64_t column,
                                                     std::function<void()> on_free) {
  const int64_t size = static_cast<int64_t>(values.size() * sizeof(float));
  const int64_t offset = ValuesOffset(phase_, rows, column);
  if (offset + size > slot_bytes_) {
    return absl::InternalError(absl::StrCat("a chunk of ", size, " bytes ", offset,
                                            " bytes into a shared-memory slot of ", slot_bytes_));
  }
  absl::MutexLock lock(&mu_);
  if (!NextFree()) {
    on_free_ = std::move(on_free);
    if (!waiter_.joinable()) waiter_ = std::thread([this] { Wait(); });
    return 0;
  }
  const int64_t slot = written_ % slots_;
  std::memcpy(base_ + Layout().header_bytes() + slot * slot_bytes_ + offset, values.data(),
              static_cast<size_t>(size));
  ++written_;
  return static_cast<int32_t>(slot + 1);
}

void SharedOutputWriter::Wait() {
  for (;;) {
    mu_.Lock();
    mu_.Await(absl::Condition(
        +[](SharedOutputWriter* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu_) {
          return w->stopping_ || w->on_free_ != nullptr;
        },
        this));
    if (stopping_) {
      mu_.Unlock();
      return;
    }
    if (NextFree()) {
      std::function<void()> on_free = std::exchange(on_free_, nullptr);
      mu_.Unlock();
      on_free();
      continue;
    }
    const uint32_t seen = Released(base_).load(std::memory_order_acquire);
    mu_.Unlock();
    // A client that releases without waking is seen within the time-out.
    WaitReleased(base_, seen, 10);
  }
}

}  // namespace pricer
