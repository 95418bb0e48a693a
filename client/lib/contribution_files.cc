#include "client/lib/contribution_files.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace pricer {
namespace {

using Part = ContributionFile::Part;

// The bytes of `part` in a chunk's Contributions.
const std::string& BytesOf(const v1::Contributions& c, Part part) {
  switch (part) {
    case Part::kValues:
      return c.values();
    case Part::kErrors:
      return c.standard_errors();
    case Part::kDelta:
      return c.delta();
    case Part::kDeltaErrors:
      return c.delta_standard_errors();
    case Part::kVega:
      return c.vega();
    case Part::kVegaErrors:
      return c.vega_standard_errors();
  }
  return c.values();
}

}  // namespace

std::vector<ContributionFile> ContributionFilesOf(const std::string& prefix,
                                                  const std::vector<StatisticItem>& levels,
                                                  bool errors, bool delta, bool vega) {
  std::vector<ContributionFile> files;
  if (prefix.empty()) return files;
  for (size_t l = 0; l < levels.size(); ++l) {
    for (auto [asked, name, part, error_part] :
         {std::tuple{true, "", Part::kValues, Part::kErrors},
          std::tuple{delta, ".delta", Part::kDelta, Part::kDeltaErrors},
          std::tuple{vega, ".vega", Part::kVega, Part::kVegaErrors}}) {
      if (!asked) continue;
      const std::string stem = absl::StrCat(prefix, ".", levels[l].name, name);
      files.push_back({stem + ".npy", static_cast<int>(l), part});
      if (errors) files.push_back({stem + ".se.npy", static_cast<int>(l), error_part});
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

absl::Status ContributionFiles::Write(const v1::ResultChunk& chunk, int64_t begin, int64_t count) {
  if (files_.empty()) return absl::OkStatus();
  if (chunk.contributions_size() != levels_) {
    return absl::InternalError(absl::StrCat(chunk.contributions_size(), " contributed levels for ",
                                            levels_, " asked for"));
  }
  for (size_t f = 0; f < files_.size(); ++f) {
    const ContributionFile& file = files_[f];
    const v1::Contributions& c = chunk.contributions(file.level);
    const int64_t rows = file.per_issuer() ? issuers_ : rows_;
    const std::string& bytes = BytesOf(c, file.part);
    if ((file.per_issuer() ? c.issuers() : c.rows()) != rows ||
        static_cast<int64_t>(bytes.size()) != rows * count * 4) {
      return absl::InternalError(absl::StrCat("contributions of ", bytes.size(), " bytes for ",
                                              count, " columns of ", rows, " rows (", file.path,
                                              ")"));
    }
    RETURN_IF_ERROR(writers_[f].WriteColumns(begin, count, BytePieces{bytes}));
  }
  return absl::OkStatus();
}

absl::Status ContributionFiles::Close() {
  for (NpyColumnWriter& writer : writers_) RETURN_IF_ERROR(writer.Close());
  return absl::OkStatus();
}

}  // namespace pricer
