// The .npy files of `pricer price --contributions-out`: each contributed
// level's contributions, A's rows x the request's columns (float32, Fortran
// order, rows in the market's or the book's order), and with --errors their
// standard errors, written at their columns' offsets as chunks arrive.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/lib/npy.h"
#include "client/lib/statistics_list.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

// The file names: PREFIX.NAME.npy and PREFIX.NAME.se.npy for each level's
// name (StatisticItem::name: es_0.975), in the order of `levels`.
struct ContributionPaths {
  std::vector<std::string> values;
  std::vector<std::string> errors;  // empty without errors
};
ContributionPaths ContributionPathsOf(const std::string& prefix,
                                      const std::vector<StatisticItem>& levels, bool errors);

class ContributionFiles {
 public:
  explicit ContributionFiles(ContributionPaths paths) : paths_(std::move(paths)) {}

  // Creates the files (or, with `reopen`, opens an interrupted run's), each
  // `rows` x `columns`.
  absl::Status Open(bool reopen, int64_t rows, int64_t columns);
  // Writes a chunk's contributions at column offset `begin` (`count`
  // columns). INTERNAL when the chunk's contributions do not fit the files
  // (their number, rows or sizes), else a file's failure.
  absl::Status Write(const v1::ResultChunk& chunk, int64_t begin, int64_t count);
  absl::Status Close();

 private:
  const ContributionPaths paths_;
  int64_t rows_ = 0;
  std::vector<NpyColumnWriter> values_, errors_;
};

}  // namespace pricer
