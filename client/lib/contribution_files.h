// The .npy files of `pricer price --contributions-out`: each contributed
// level's contributions, A's rows x the request's columns (float32, Fortran
// order, rows in the market's or the book's order), with --sensitivities its
// delta and vega (issuers x columns), and with --errors the standard error
// of each, written at their columns' offsets as chunks arrive.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/lib/npy.h"
#include "client/lib/reply_decoding.h"
#include "client/lib/statistics_list.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

// One file: an array of a contributed level's results.
struct ContributionFile {
  std::string path;
  int level = 0;  // among the chunk's Contributions
  // Which array: a v1::Contributions bytes field (kValuesFieldNumber, ...).
  int field = v1::Contributions::kValuesFieldNumber;
  // The sensitivities have a row per issuer, the contributions per row of A.
  bool per_issuer() const {
    return field != v1::Contributions::kValuesFieldNumber &&
           field != v1::Contributions::kStandardErrorsFieldNumber;
  }
};

// PREFIX.NAME.npy (and .se.npy with errors), PREFIX.NAME.delta.npy,
// PREFIX.NAME.vega.npy (and their .se.npy) for each level's name
// (StatisticItem::name: es_0.975), in the order of `levels`.
std::vector<ContributionFile> ContributionFilesOf(const std::string& prefix,
                                                  const std::vector<StatisticItem>& levels,
                                                  bool errors, bool delta, bool vega);

class ContributionFiles {
 public:
  explicit ContributionFiles(std::vector<ContributionFile> files) : files_(std::move(files)) {}

  // Creates the files (or, with `reopen`, opens an interrupted run's): A's
  // `rows` or the `issuers` x `columns`.
  absl::Status Open(bool reopen, int64_t rows, int64_t issuers, int64_t columns);
  // Writes a chunk's contributions (`arrays`, decoded apart from `chunk`:
  // reply_decoding.h) at column offset `begin` (`count` columns), from where
  // they lie. INTERNAL when they do not fit the files (their number, rows or
  // sizes), else a file's failure.
  absl::Status Write(const v1::ResultChunk& chunk, const std::vector<ContributionArrays>& arrays,
                     int64_t begin, int64_t count);
  absl::Status Close();

 private:
  const std::vector<ContributionFile> files_;
  int64_t rows_ = 0, issuers_ = 0;
  int levels_ = 0;
  std::vector<NpyColumnWriter> writers_;  // one per file
};

}  // namespace pricer
