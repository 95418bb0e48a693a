// Checks of `pricer price`'s output files before a job is sent, so that a
// file that cannot be written is found before the work, not after it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace pricer {

struct OutputFile {
  std::string flag;   // e.g. "--full-out", for the messages
  std::string path;   // empty: not asked for
  int64_t bytes = 0;  // its size when known before the call (a .npy); 0: unknown
};

// Each file can be written: it exists and opens for writing (a device such
// as /dev/null too), or its directory lets it be created (tried, then
// removed). The regular files of known size fit in the space free to this
// user on their file systems, less what files of those names hold already,
// which they replace. Errors name the flag, the file and the bytes, e.g.
//   --full-out /mnt/small/sc.npy: not enough disk space: it needs 4000128
//   bytes, 1032192 are available
absl::Status CheckOutputFiles(const std::vector<OutputFile>& files);

}  // namespace pricer
