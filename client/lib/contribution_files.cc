#include "client/lib/contribution_files.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace pricer {

ContributionPaths ContributionPathsOf(const std::string& prefix,
                                      const std::vector<StatisticItem>& levels, bool errors) {
  ContributionPaths paths;
  if (prefix.empty()) return paths;
  for (const StatisticItem& level : levels) {
    paths.values.push_back(absl::StrCat(prefix, ".", level.name, ".npy"));
    if (errors) paths.errors.push_back(absl::StrCat(prefix, ".", level.name, ".se.npy"));
  }
  return paths;
}

absl::Status ContributionFiles::Open(bool reopen, int64_t rows, int64_t columns) {
  rows_ = rows;
  const auto open = reopen ? NpyColumnWriter::OpenExisting : NpyColumnWriter::Create;
  for (auto [paths, writers] :
       {std::pair{&paths_.values, &values_}, std::pair{&paths_.errors, &errors_}}) {
    for (const std::string& path : *paths) {
      ASSIGN_OR_RETURN(NpyColumnWriter writer, open(path, rows, columns));
      writers->push_back(std::move(writer));
    }
  }
  return absl::OkStatus();
}

absl::Status ContributionFiles::Write(const v1::ResultChunk& chunk, int64_t begin, int64_t count) {
  if (values_.empty()) return absl::OkStatus();
  if (chunk.contributions_size() != static_cast<int>(values_.size())) {
    return absl::InternalError(absl::StrCat(chunk.contributions_size(), " contributed levels for ",
                                            values_.size(), " asked for"));
  }
  const auto bytes = static_cast<size_t>(rows_ * count) * sizeof(float);
  for (size_t l = 0; l < values_.size(); ++l) {
    const v1::Contributions& c = chunk.contributions(static_cast<int>(l));
    const bool errors = !errors_.empty();
    if (c.rows() != rows_ || c.values().size() != bytes ||
        c.standard_errors().size() != (errors ? bytes : 0)) {
      return absl::InternalError(absl::StrCat("contributions of ", c.rows(), " rows in ",
                                              c.values().size(), " bytes for ", count,
                                              " columns of ", rows_, " rows"));
    }
    RETURN_IF_ERROR(values_[l].WriteColumns(begin, count, BytePieces{c.values()}));
    if (errors)
      RETURN_IF_ERROR(errors_[l].WriteColumns(begin, count, BytePieces{c.standard_errors()}));
  }
  return absl::OkStatus();
}

absl::Status ContributionFiles::Close() {
  for (auto* writers : {&values_, &errors_}) {
    for (NpyColumnWriter& writer : *writers) RETURN_IF_ERROR(writer.Close());
  }
  return absl::OkStatus();
}

}  // namespace pricer
