#include "client/lib/contribution_files.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace pricer {
std::vector<ContributionFile> ContributionFilesOf(const std::string& prefix,
                                                  const std::vector<StatisticItem>& levels,
                                                  bool errors, bool delta, bool vega) {
  std::vector<ContributionFile> files;
  if (prefix.empty()) return files;
  using C = v1::Contributions;
  for (size_t l = 0; l < levels.size(); ++l) {
    for (auto [asked, name, field, error_field] :
         {std::tuple{true, "", C::kValuesFieldNumber, C::kStandardErrorsFieldNumber},
          std::tuple{delta, ".delta", C::kDeltaFieldNumber, C::kDeltaStandardErrorsFieldNumber},
          std::tuple{vega, ".vega", C::kVegaFieldNumber, C::kVegaStandardErrorsFieldNumber}}) {
      if (!asked) continue;
      const std::string stem = absl::StrCat(prefix, ".", levels[l].name, name);
      files.push_back({stem + ".npy", static_cast<int>(l), field});
      if (errors) files.push_back({stem + ".se.npy", static_cast<int>(l), error_field});
    }
  }
  return files;
}

absl::Status ContributionFiles::Open(bool reopen, int64_t rows, int64_t issuers, int64_t columns) {
  rows_ = rows;
  issuers_ = issuers;
  const auto open = reopen ? NpyColumnWriter::OpenExisting : NpyColumnWriter::Create;
  for (const ContributionFile& file : files_) {
    ASSIGN_OR_RETURN(NpyColumnWriter writer,
                     open(file.path, file.per_issuer() ? issuers : rows, columns));
    writers_.push_back(std::move(writer));
    levels_ = std::max(levels_, file.level + 1);
  }
  return absl::OkStatus();
}

absl::Status ContributionFiles::Write(const v1::ResultChunk& chunk,
                                      const std::vector<ContributionArrays>& arrays, int64_t begin,
                                      int64_t count) {
  if (files_.empty()) return absl::OkStatus();
  if (chunk.contributions_size() != levels_ || std::ssize(arrays) != levels_) {
    return absl::InternalError(absl::StrCat(chunk.contributions_size(), " contributed levels for ",
                                            levels_, " asked for"));
  }
  for (size_t f = 0; f < files_.size(); ++f) {
    const ContributionFile& file = files_[f];
    const v1::Contributions& c = chunk.contributions(file.level);
    const int64_t rows = file.per_issuer() ? issuers_ : rows_;
    const auto array = arrays[static_cast<size_t>(file.level)].find(file.field);
    const int64_t size =
        array == arrays[static_cast<size_t>(file.level)].end() ? 0 : array->second.size();
    if ((file.per_issuer() ? c.issuers() : c.rows()) != rows || size != rows * count * 4) {
      return absl::InternalError(absl::StrCat("contributions of ", size, " bytes for ", count,
                                              " columns of ", rows, " rows (", file.path, ")"));
    }
    RETURN_IF_ERROR(writers_[f].WriteColumns(begin, count, array->second.pieces()));
  }
  return absl::OkStatus();
}

absl::Status ContributionFiles::Close() {
  for (NpyColumnWriter& writer : writers_) RETURN_IF_ERROR(writer.Close());
  return absl::OkStatus();
}

}  // namespace pricer
