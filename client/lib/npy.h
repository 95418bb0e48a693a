// NumPy .npy files (format version 1.0): the result matrices the CLI writes
// and the scenario matrices it reads.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pricer {

// A float32 matrix file in Fortran (column-major) order whose columns are
// written at their offsets as they arrive, so a P x M result never has to be
// held in memory: each column chunk is one contiguous run of the file.
class NpyColumnWriter {
 public:
  static absl::StatusOr<NpyColumnWriter> Create(const std::string& path, int64_t rows,
                                                int64_t columns);
  // Opens a file that Create made, in place (a resumed run keeps the columns
  // already written); fails unless its header and size are those of a rows
  // x columns file.
  static absl::StatusOr<NpyColumnWriter> OpenExisting(const std::string& path, int64_t rows,
                                                      int64_t columns);
  NpyColumnWriter(NpyColumnWriter&& other) noexcept;
  NpyColumnWriter& operator=(NpyColumnWriter&& other) = delete;
  ~NpyColumnWriter();

  // Writes columns [first, first + count): rows * count float32, column-major,
  // and flushes them, so that a run killed afterwards finds them in the file.
  absl::Status WriteColumns(int64_t first, int64_t count, const float* values);
  // Flushes and closes; reports a failed write.
  absl::Status Close();

 private:
  NpyColumnWriter(std::FILE* file, std::string path, int64_t rows, int64_t columns,
                  int64_t data_offset)
      : file_(file),
        path_(std::move(path)),
        rows_(rows),
        columns_(columns),
        data_offset_(data_offset) {}

  std::FILE* file_ = nullptr;
  std::string path_;
  int64_t rows_ = 0;
  int64_t columns_ = 0;
  int64_t data_offset_ = 0;
};

// A matrix read from a .npy file, converted to float32 column-major.
struct NpyMatrix {
  int64_t rows = 0;
  int64_t columns = 0;
  std::vector<float> values;  // element (i, j) at j * rows + i
};

// Reads a 2-D float32 or float64 array, C or Fortran order, little-endian.
absl::StatusOr<NpyMatrix> ReadNpyMatrix(const std::string& path);

}  // namespace pricer
