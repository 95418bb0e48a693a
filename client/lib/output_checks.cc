#include "client/lib/output_checks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace pricer {
namespace {

absl::Status CannotWrite(const OutputFile& file, int error) {
  return absl::FailedPreconditionError(
      absl::StrCat(file.flag, " ", file.path, ": cannot be written: ", std::strerror(error)));
}

// Opens the file for writing as the run will, without changing it; a file
// that does not exist yet is created and removed again.
absl::Status CheckWritable(const OutputFile& file) {
  // O_NONBLOCK: a FIFO without a reader fails instead of waiting.
  int fd = open(file.path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    fd = open(file.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) unlink(file.path.c_str());
  }
  if (fd < 0) return CannotWrite(file, errno);
  close(fd);
  return absl::OkStatus();
}

// The free space of one file system and what the files on it need.
struct Disk {
  int64_t available = 0;
  int64_t needed = 0;
  std::string flags;  // the files counted so far, for the message
};

}  // namespace

absl::Status CheckOutputFiles(const std::vector<OutputFile>& files) {
  std::map<dev_t, Disk> disks;
  for (const OutputFile& file : files) {
    if (file.path.empty()) continue;
    RETURN_IF_ERROR(CheckWritable(file));
    if (file.bytes <= 0) continue;
    struct stat info {};
    int64_t held = 0;  // the blocks of the file this one replaces
    if (stat(file.path.c_str(), &info) == 0) {
      if (!S_ISREG(info.st_mode)) continue;  // a device such as /dev/null
      held = static_cast<int64_t>(info.st_blocks) * 512;
    }
    const std::filesystem::path parent = std::filesystem::path(file.path).parent_path();
    const std::string directory = parent.empty() ? "." : parent.string();
    struct statvfs fs {};
    if (stat(directory.c_str(), &info) != 0 || statvfs(directory.c_str(), &fs) != 0) {
      return CannotWrite(file, errno);
    }
    Disk& disk = disks[info.st_dev];
    disk.available = static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
    const int64_t bytes = std::max<int64_t>(0, file.bytes - held);
    disk.needed += bytes;
    if (disk.needed > disk.available) {
      const std::string with =
          disk.flags.empty() ? "" : absl::StrCat(" (", disk.needed, " with ", disk.flags, ")");
      return absl::ResourceExhaustedError(
          absl::StrCat(file.flag, " ", file.path, ": not enough disk space: it needs ", bytes,
                       " bytes", with, ", ", disk.available, " are available"));
    }
    absl::StrAppend(&disk.flags, disk.flags.empty() ? "" : " and ", file.flag);
  }
  return absl::OkStatus();
}

}  // namespace pricer
