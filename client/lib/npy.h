// NumPy .npy files (format version 1.0): the result matrices the CLI writes
// and the scenario matrices it reads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "client/lib/byte_pieces.h"

namespace pricer {

// The size of the rows x columns float32 .npy file NpyColumnWriter writes:
// its header and the values.
int64_t NpyFileBytes(int64_t rows, int64_t columns);
// The phase of a shared-memory ring (SharedMemoryRing.phase) that places
// each chunk's values in their slot as NpyColumnWriter places column c of a
// rows x columns file whose first column is `first_column`: at the same
// offset modulo 4 KiB, so that its direct writes need no staging copy.
int32_t NpyColumnPhase(int64_t rows, int64_t columns, int64_t first_column);

// A float32 matrix file in Fortran (column-major) order whose columns are
// written at their offsets as they arrive, so a P x M result never has to be
// held in memory: each column chunk is one contiguous run of the file.
//
// On a file system that allows it, the whole 4 KiB blocks of a chunk are
// written with O_DIRECT, from an aligned staging buffer, and only the partial
// blocks at its two ends through the page cache: a result of tens of GB would
// otherwise fill the cache and evict everything else, and on the development
// machine the page cache path wrote 0.4-0.5 GB/s where direct writes ran at
// 2 GB/s. No block is written both ways, so the two paths never overlap.
// Elsewhere (tmpfs on older kernels, /dev/null) every write is a pwritev of
// the chunk's pieces.
class NpyColumnWriter {
 public:
  // Creates the file at its full size (preallocated where the file system
  // can: a disk too small fails here, naming the size).
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
  // given in `pieces` (their lengths add up to rows * count * 4 bytes), so
  // that a run killed afterwards finds them in the file.
  absl::Status WriteColumns(int64_t first, int64_t count, const BytePieces& pieces);
  absl::Status WriteColumns(int64_t first, int64_t count, const float* values);
  // Closes; reports a failed write.
  absl::Status Close();

 private:
  struct FreeAligned {
    void operator()(char* p) const;
  };

  NpyColumnWriter(int file, std::string path, int64_t rows, int64_t columns, int64_t data_offset)
      : file_(file),
        path_(std::move(path)),
        rows_(rows),
        columns_(columns),
        data_offset_(data_offset) {}
  // Opens the second, direct descriptor when the file system allows it.
  void OpenDirect();
  // Bytes [offset, offset + size of `pieces`) of the file through the cache.
  absl::Status WriteCached(int64_t offset, const BytePieces& pieces);
  // Whole aligned blocks, through the staging buffer.
  absl::Status WriteDirect(int64_t offset, const BytePieces& pieces);
  absl::Status WriteError() const;

  int file_ = -1;
  int direct_ = -1;  // the same file with O_DIRECT, or -1
  std::unique_ptr<char, FreeAligned> staging_;
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
