#include "client/lib/progress_journal.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace pricer {
namespace {

constexpr char kMagic[] = "pricer progress journal 1\n";

absl::Status WriteError(const std::string& path) {
  return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
}

}  // namespace

std::string ProgressJournal::Fingerprint(const v1::PriceRequest& request,
                                         const std::vector<std::string>& output_files) {
  if (request.priority() != 0) {
    v1::PriceRequest same = request;  // the same bytes at any priority
    same.clear_priority();
    return Fingerprint(same, output_files);
  }
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    request.SerializeToCodedStream(&coded);
  }
  // Each name with its terminating NUL: ("ab", "") and ("a", "b") differ.
  for (const std::string& name : output_files) bytes.append(name.c_str(), name.size() + 1);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), static_cast<size_t>(size)));
}

absl::StatusOr<ProgressJournal> ProgressJournal::Create(const std::string& path,
                                                        const std::string& fingerprint) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  ProgressJournal journal(file, path);
  const std::string header = absl::StrCat(kMagic, fingerprint, "\n");
  if (std::fwrite(header.data(), 1, header.size(), file) != header.size() ||
      std::fflush(file) != 0) {
    return WriteError(path);
  }
  return journal;
}

absl::StatusOr<ProgressJournal> ProgressJournal::Resume(const std::string& path,
                                                        const std::string& fingerprint,
                                                        std::vector<v1::PriceReply>* records) {
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("no journal ", path, " to resume from"));
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::string header = absl::StrCat(kMagic, fingerprint, "\n");
  if (text.compare(0, sizeof(kMagic) - 1, kMagic) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a pricer progress journal"));
  }
  if (text.compare(0, header.size(), header) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path,
                     " records a run of another request or other output files: give the flags of "
                     "that run, or delete it to start over"));
  }
  // Whole records only: the last one may have been cut short by a kill.
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(text.data()),
                                            static_cast<int>(text.size()));
  in.Skip(static_cast<int>(header.size()));
  records->clear();
  size_t good = header.size();
  uint32_t size = 0;
  while (in.ReadVarint32(&size)) {
    std::string bytes;
    v1::PriceReply reply;
    if (!in.ReadString(&bytes, static_cast<int>(size)) || !reply.ParseFromString(bytes)) break;
    records->push_back(std::move(reply));
    good = static_cast<size_t>(in.CurrentPosition());
  }
  std::FILE* file = std::fopen(path.c_str(), "r+b");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  ProgressJournal journal(file, path);
  if (ftruncate(fileno(file), static_cast<off_t>(good)) != 0 || fseeko(file, 0, SEEK_END) != 0) {
    return WriteError(path);
  }
  return journal;
}

ProgressJournal::ProgressJournal(ProgressJournal&& other) noexcept
    : file_(std::exchange(other.file_, nullptr)), path_(std::move(other.path_)) {}

ProgressJournal::~ProgressJournal() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status ProgressJournal::Append(const v1::PriceReply& reply) {
  v1::PriceReply record = reply;
  if (record.has_chunk()) {  // what goes to the .npy files
    record.mutable_chunk()->clear_values();
    record.mutable_chunk()->clear_contributions();
  }
  if (record.has_prices()) record.mutable_prices()->clear_values();
  if (record.has_values()) record.mutable_values()->clear_values();
  const std::string bytes = record.SerializeAsString();
  std::string framed;
  {
    google::protobuf::io::StringOutputStream stream(&framed);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteVarint32(static_cast<uint32_t>(bytes.size()));
    coded.WriteString(bytes);
  }
  if (std::fwrite(framed.data(), 1, framed.size(), file_) != framed.size() ||
      std::fflush(file_) != 0) {
    return WriteError(path_);
  }
  return absl::OkStatus();
}

absl::Status ProgressJournal::Remove() {
  std::FILE* file = std::exchange(file_, nullptr);
  if (file != nullptr) std::fclose(file);
  if (std::remove(path_.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot delete ", path_, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace pricer
