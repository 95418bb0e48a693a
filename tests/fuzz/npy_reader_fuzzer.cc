// ReadNpyMatrix (client/lib/npy.h) on arbitrary bytes: a .npy file given to
// `pricer price --scenarios-file` or `pricer upload` may come from anyone.
#include <cstdlib>

#include "client/lib/npy.h"
#include "tests/fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static pricer::FuzzInputFile file("npy");
  absl::StatusOr<pricer::NpyMatrix> matrix = pricer::ReadNpyMatrix(file.Write(data, size));
  if (matrix.ok() &&
      (matrix->rows < 1 || matrix->columns < 1 ||
       matrix->values.size() != static_cast<size_t>(matrix->rows * matrix->columns))) {
    std::abort();  // an accepted matrix must hold rows * columns values
  }
  return 0;
}
