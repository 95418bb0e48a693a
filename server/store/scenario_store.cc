#include "server/store/scenario_store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"

namespace pricer {
namespace {

// The file of one set: this magic, rows and columns (int64), the values.
constexpr char kMagic[8] = {'P', 'R', 'S', 'E', 'T', '0', '0', '1'};

bool IsId(const std::string& id) {
  if (id.size() != 64) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Writes all of `data` to `fd`.
bool WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

ScenarioStore::ScenarioStore(int64_t max_bytes, std::string directory)
    : max_bytes_(max_bytes), directory_(std::move(directory)) {}

std::string ScenarioStore::IdOf(int64_t rows, int64_t columns, const std::vector<float>& values) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  EVP_DigestInit_ex(context, EVP_sha256(), nullptr);
  EVP_DigestUpdate(context, &rows, sizeof(rows));
  EVP_DigestUpdate(context, &columns, sizeof(columns));
  EVP_DigestUpdate(context, values.data(), values.size() * sizeof(float));
  EVP_DigestFinal_ex(context, digest, &size);
  EVP_MD_CTX_free(context);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), static_cast<size_t>(size)));
}

namespace {

// The writer's pid of a temporary file's name `<64 hex>.set.tmp.<pid>.<n>`;
// 0 for any other name.
int64_t TemporaryWriter(absl::string_view name) {
  constexpr absl::string_view kMiddle = ".set.tmp.";
  const auto hex = [](char c) { return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f'); };
  const auto digits = [](absl::string_view part) {
    return !part.empty() && std::all_of(part.begin(), part.end(), absl::ascii_isdigit);
  };
  if (name.size() <= 64 + kMiddle.size() || !std::all_of(name.begin(), name.begin() + 64, hex) ||
      name.substr(64, kMiddle.size()) != kMiddle) {
    return 0;
  }
  const std::vector<absl::string_view> parts =
      absl::StrSplit(name.substr(64 + kMiddle.size()), '.');
  int64_t pid = 0;
  if (parts.size() != 2 || !digits(parts[0]) || !digits(parts[1]) ||
      !absl::SimpleAtoi(parts[0], &pid)) {
    return 0;
  }
  return pid;
}

}  // namespace

int64_t ScenarioStore::RemoveTornWrites() const {
  if (directory_.empty()) return 0;
  int64_t removed = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory_, error)) {
    const int64_t pid = TemporaryWriter(entry.path().filename().string());
    if (pid <= 0) continue;
    const bool writer_alive = ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
    if (!writer_alive && std::filesystem::remove(entry.path(), error)) ++removed;
  }
  return removed;
}

std::string ScenarioStore::PathOf(const std::string& id) const {
  return absl::StrCat(directory_, "/", id, ".set");
}

absl::Status ScenarioStore::WriteFile(const std::string& id, int64_t rows, int64_t columns,
                                      const std::vector<float>& values) const {
  // A temporary file, fsynced, then renamed over the final name, and the
  // directory fsynced: a crash leaves the whole set or none of it. Its name
  // is unique per write: two uploads of the same set at once never share one.
  static std::atomic<uint64_t> writes{0};
  const std::string path = PathOf(id);
  const std::string temporary = absl::StrCat(path, ".tmp.", ::getpid(), ".", writes++);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot create ", temporary, ": ", strerror(errno)));
  }
  const bool written = WriteAll(fd, kMagic, sizeof(kMagic)) && WriteAll(fd, &rows, sizeof(rows)) &&
                       WriteAll(fd, &columns, sizeof(columns)) &&
                       WriteAll(fd, values.data(), values.size() * sizeof(float)) &&
                       ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!written || ::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
    return absl::InternalError(
        absl::StrCat("cannot write ", path, ": ", strerror(written ? errno : saved)));
  }
  const int dir = ::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return absl::OkStatus();
}

absl::StatusOr<ScenarioStore::Shape> ScenarioStore::ReadHeader(const std::string& id,
                                                               std::ifstream& in) const {
  in.open(PathOf(id), std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("no scenario set ", id));
  char magic[sizeof(kMagic)];
  Shape shape;
  in.read(magic, sizeof(magic));
  in.read(reinterpret_cast<char*>(&shape.rows), sizeof(shape.rows));
  in.read(reinterpret_cast<char*>(&shape.columns), sizeof(shape.columns));
  // The shape must account for the file's size exactly before anything is
  // allocated: a damaged shape must not ask for terabytes.
  std::error_code error;
  const auto file_bytes = static_cast<int64_t>(std::filesystem::file_size(PathOf(id), error));
  const int64_t value_bytes = file_bytes - static_cast<int64_t>(in.tellg());
  if (!in || error || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0 || shape.rows < 1 ||
      shape.columns < 1 || shape.columns > value_bytes / 4 / shape.rows ||
      shape.rows * shape.columns * 4 != value_bytes) {
    return absl::DataLossError(absl::StrCat("the file of scenario set ", id, " is damaged"));
  }
  return shape;
}

absl::StatusOr<ScenarioStore::Entry> ScenarioStore::ReadFile(const std::string& id) const {
  std::ifstream in;
  ASSIGN_OR_RETURN(const Shape shape, ReadHeader(id, in));
  Entry entry;
  entry.rows = shape.rows;
  entry.columns = shape.columns;
  auto values =
      std::make_shared<std::vector<float>>(static_cast<size_t>(entry.rows * entry.columns));
  in.read(reinterpret_cast<char*>(values->data()),
          static_cast<std::streamsize>(values->size() * sizeof(float)));
  if (!in || IdOf(entry.rows, entry.columns, *values) != id) {
    return absl::DataLossError(absl::StrCat("the file of scenario set ", id, " is damaged"));
  }
  entry.values = std::move(values);
  return entry;
}

void ScenarioStore::Remember(const std::string& id, Entry entry) {
  const int64_t bytes = entry.rows * entry.columns * static_cast<int64_t>(sizeof(float));
  if (bytes > max_bytes_) return;  // on disk only
  while (bytes_ + bytes > max_bytes_ && !recency_.empty()) {
    const std::string oldest = recency_.back();
    recency_.pop_back();
    const Entry& evicted = sets_.at(oldest);
    bytes_ -= evicted.rows * evicted.columns * static_cast<int64_t>(sizeof(float));
    sets_.erase(oldest);
  }
  recency_.push_front(id);
  entry.recency = recency_.begin();
  sets_[id] = std::move(entry);
  bytes_ += bytes;
}

absl::StatusOr<StoredSet> ScenarioStore::Put(int64_t rows, int64_t columns,
                                             std::vector<float> values) {
  StoredSet stored;
  stored.id = IdOf(rows, columns, values);
  stored.rows = rows;
  stored.columns = columns;
  stored.bytes = rows * columns * static_cast<int64_t>(sizeof(float));
  if (stored.bytes > max_bytes_ && directory_.empty()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the scenario set has ", stored.bytes, " bytes, over the store's memory bound of ",
        max_bytes_, " bytes (--scenario-store-bytes), and no --scenario-dir is set"));
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = sets_.find(stored.id);
    if (it != sets_.end()) {
      recency_.splice(recency_.begin(), recency_, it->second.recency);
      stored.existed = true;
      return stored;
    }
  }
  if (!directory_.empty()) {
    // A file already there counts only if it reads back whole; a damaged one
    // is replaced by this upload.
    if (::access(PathOf(stored.id).c_str(), F_OK) == 0 && ReadFile(stored.id).ok()) {
      stored.existed = true;
    } else {
      RETURN_IF_ERROR(WriteFile(stored.id, rows, columns, values));
    }
  }
  absl::MutexLock lock(&mu_);
  if (sets_.count(stored.id) == 0) {
    Remember(
        stored.id,
        Entry{rows, columns, std::make_shared<const std::vector<float>>(std::move(values)), {}});
  }
  return stored;
}

absl::StatusOr<ScenarioMatrix> ScenarioStore::Get(const std::string& id) {
  {
    absl::MutexLock lock(&mu_);
    auto it = sets_.find(id);
    if (it != sets_.end()) {
      recency_.splice(recency_.begin(), recency_, it->second.recency);
      return ScenarioMatrix::Inline(it->second.rows, it->second.columns, it->second.values);
    }
  }
  if (directory_.empty() || !IsId(id)) {
    return absl::NotFoundError(absl::StrCat("no scenario set ", id));
  }
  ASSIGN_OR_RETURN(Entry entry, ReadFile(id));
  const ScenarioMatrix matrix = ScenarioMatrix::Inline(entry.rows, entry.columns, entry.values);
  absl::MutexLock lock(&mu_);
  if (sets_.count(id) == 0) Remember(id, std::move(entry));
  return matrix;
}

absl::StatusOr<ScenarioStore::Shape> ScenarioStore::ShapeOf(const std::string& id) const {
  {
    absl::MutexLock lock(&mu_);
    auto it = sets_.find(id);
    if (it != sets_.end()) return Shape{it->second.rows, it->second.columns};
  }
  if (directory_.empty() || !IsId(id)) {
    return absl::NotFoundError(absl::StrCat("no scenario set ", id));
  }
  std::ifstream in;
  return ReadHeader(id, in);
}

int64_t ScenarioStore::bytes_in_memory() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace pricer
