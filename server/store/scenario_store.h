// Uploaded scenario sets: N x M float32 matrices kept under the SHA-256 of
// their contents, in host memory up to a byte bound (least recently used
// sets leave first) and, when a directory is given, on disk, so that a
// restarted server finds them again.
#pragma once

#include <cstdint>
#include <fstream>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/model/job_spec.h"

namespace pricer {

struct StoredSet {
  std::string id;  // 64 lowercase hex digits
  int64_t rows = 0;
  int64_t columns = 0;
  int64_t bytes = 0;     // 4 * rows * columns
  bool existed = false;  // the same contents were stored before
};

class ScenarioStore {
 public:
  // `max_bytes` bounds the sets held in memory; `directory` (empty: none)
  // keeps every set on disk as well.
  ScenarioStore(int64_t max_bytes, std::string directory);

  // The id of a matrix: SHA-256 over rows and columns (little-endian int64)
  // followed by the rows * columns float32 values (column-major, little-endian).
  static std::string IdOf(int64_t rows, int64_t columns, const std::vector<float>& values);

  // Removes the temporary files of writes that a crash cut short: named
  // `<id>.set.tmp.<pid>.<n>`, with no process `pid` on this host (the
  // directory belongs to one server at a time). Returns how many.
  int64_t RemoveTornWrites() const;

  // Stores a matrix (or finds it stored). RESOURCE_EXHAUSTED when it is
  // larger than the memory bound and there is no directory; INTERNAL when
  // the disk write fails (nothing is stored then).
  absl::StatusOr<StoredSet> Put(int64_t rows, int64_t columns, std::vector<float> values);
  // The set as a scenario matrix, from memory or disk; NOT_FOUND if unknown.
  absl::StatusOr<ScenarioMatrix> Get(const std::string& id);
  // The shape of a set without reading its values (a file's header only);
  // NOT_FOUND if unknown.
  struct Shape {
    int64_t rows = 0, columns = 0;
  };
  absl::StatusOr<Shape> ShapeOf(const std::string& id) const;

  int64_t max_bytes() const { return max_bytes_; }
  int64_t bytes_in_memory() const;

 private:
  struct Entry {
    int64_t rows = 0;
    int64_t columns = 0;
    std::shared_ptr<const std::vector<float>> values;
    std::list<std::string>::iterator recency;
  };

  std::string PathOf(const std::string& id) const;
  absl::Status WriteFile(const std::string& id, int64_t rows, int64_t columns,
                         const std::vector<float>& values) const;
  absl::StatusOr<Entry> ReadFile(const std::string& id) const;
  // Opens a set's file and reads its shape, checked against the file's size.
  absl::StatusOr<Shape> ReadHeader(const std::string& id, std::ifstream& in) const;
  // Keeps `entry` in memory as the most recently used, evicting others.
  void Remember(const std::string& id, Entry entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t max_bytes_;
  const std::string directory_;
  mutable absl::Mutex mu_;
  std::unordered_map<std::string, Entry> sets_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> recency_ ABSL_GUARDED_BY(mu_);  // most recent first
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace pricer
