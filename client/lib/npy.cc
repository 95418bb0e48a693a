#include "client/lib/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/lib/byte_pieces.h"
#include "common/status_macros.h"

namespace pricer {
namespace {

static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";

// O_DIRECT wants offsets, sizes and buffers aligned to the device's logical
// block, at most 4 KiB on the disks this runs on.
constexpr int64_t kDirectAlignment = 4096;
constexpr int64_t kStagingBytes = 4 << 20;

// The header dict, padded with spaces and a newline so that the data starts
// at a multiple of 64 bytes, as NumPy writes it.
std::string MakeHeader(int64_t rows, int64_t columns) {
  std::string dict = absl::StrCat("{'descr': '<f4', 'fortran_order': True, 'shape': (", rows, ", ",
                                  columns, "), }");
  const size_t unpadded = 6 + 2 + 2 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string header(kMagic, 6);
  header.push_back('\x01');
  header.push_back('\x00');
  header.push_back(static_cast<char>(dict.size() & 0xff));
  header.push_back(static_cast<char>(dict.size() >> 8));
  return header + dict;
}

// The value of `key` in a header dict such as {'descr': '<f4', ...}.
absl::StatusOr<std::string> DictValue(absl::string_view dict, absl::string_view key) {
  const std::string quoted = absl::StrCat("'", key, "':");
  const size_t at = dict.find(quoted);
  if (at == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("the .npy header has no ", key));
  }
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(dict.substr(at + quoted.size()));
  const size_t end = absl::StartsWith(rest, "(") ? rest.find(')') + 1 : rest.find_first_of(",}");
  return std::string(rest.substr(0, end));
}

// Whether `in` has at least `bytes` more bytes. A size the file cannot hold
// is refused before anything is allocated for it: a 20-byte file that
// declares 4 GiB costs nothing. A stream that cannot seek (a pipe) is not
// checked here; its read fails when it ends.
bool HasBytes(std::ifstream& in, uint64_t bytes) {
  const std::streampos at = in.tellg();
  if (at < 0 || !in.seekg(0, std::ios::end)) {
    in.clear();
    return true;
  }
  const std::streampos end = in.tellg();
  in.seekg(at);
  return end >= at && static_cast<uint64_t>(end - at) >= bytes;
}

// The header dict of the .npy file `in` reads, after its magic and length.
absl::StatusOr<std::string> ReadHeaderDict(std::ifstream& in, const std::string& path) {
  char prefix[10];
  if (!in.read(prefix, 10) || std::memcmp(prefix, kMagic, 6) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a .npy file"));
  }
  const int major = static_cast<unsigned char>(prefix[6]);
  size_t header_size = static_cast<unsigned char>(prefix[8]) |
                       (static_cast<size_t>(static_cast<unsigned char>(prefix[9])) << 8);
  if (major >= 2) {  // versions 2 and 3 have a 4-byte header length
    char more[2];
    if (!in.read(more, 2)) return absl::InvalidArgumentError(absl::StrCat(path, ": short header"));
    header_size |= (static_cast<size_t>(static_cast<unsigned char>(more[0])) << 16) |
                   (static_cast<size_t>(static_cast<unsigned char>(more[1])) << 24);
  }
  if (!HasBytes(in, header_size)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": short header"));
  }
  std::string dict(header_size, '\0');
  if (!in.read(dict.data(), static_cast<std::streamsize>(header_size))) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": short header"));
  }
  return dict;
}

// Fills m.values, column-major float32, from `raw`: the rows x columns
// elements as the file holds them (float32 or float64, C or Fortran order).
void ConvertValues(const std::vector<char>& raw, bool f32, bool fortran, NpyMatrix& m) {
  m.values.resize(static_cast<size_t>(m.rows * m.columns));
  for (int64_t i = 0; i < m.rows; ++i) {
    for (int64_t j = 0; j < m.columns; ++j) {
      const size_t from = static_cast<size_t>(fortran ? j * m.rows + i : i * m.columns + j);
      float value;
      if (f32) {
        std::memcpy(&value, raw.data() + from * 4, 4);
      } else {
        double wide;
        std::memcpy(&wide, raw.data() + from * 8, 8);
        value = static_cast<float>(wide);
      }
      m.values[static_cast<size_t>(j * m.rows + i)] = value;
    }
  }
}

}  // namespace

int64_t NpyFileBytes(int64_t rows, int64_t columns) {
  return static_cast<int64_t>(MakeHeader(rows, columns).size()) + rows * columns * 4;
}

int32_t NpyColumnPhase(int64_t rows, int64_t columns, int64_t first_column) {
  const int64_t data_offset = static_cast<int64_t>(MakeHeader(rows, columns).size());
  const int64_t phase = (data_offset - 4 * rows * first_column) % kDirectAlignment;
  return static_cast<int32_t>(phase < 0 ? phase + kDirectAlignment : phase);
}

absl::StatusOr<NpyColumnWriter> NpyColumnWriter::Create(const std::string& path, int64_t rows,
                                                        int64_t columns) {
  const int file = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (file < 0) {
    return absl::NotFoundError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  const std::string header = MakeHeader(rows, columns);
  NpyColumnWriter writer(file, path, rows, columns, static_cast<int64_t>(header.size()));
  if (absl::Status s = writer.WriteCached(0, {header}); !s.ok()) return s;
  // Size the file up front: columns arrive in any order. A device such as
  // /dev/null (a benchmark's sink) takes the writes as they come.
  const int64_t total = NpyFileBytes(rows, columns);
  struct stat info {};
  if (fstat(file, &info) == 0 && S_ISREG(info.st_mode)) {
    // fallocate, not posix_fallocate: where the file system cannot, glibc's
    // emulation would write every block.
    const bool allocated = fallocate(file, 0, 0, total) == 0;
    if (!allocated && errno == ENOSPC) {
      return absl::ResourceExhaustedError(
          absl::StrCat("not enough disk space for ", path, ": it needs ", total, " bytes"));
    }
    if (!allocated && ftruncate(file, total) != 0) {
      return absl::InternalError(
          absl::StrCat("cannot size ", path, " to ", total, " bytes: ", std::strerror(errno)));
    }
    writer.OpenDirect();
  }
  return writer;
}

absl::StatusOr<NpyColumnWriter> NpyColumnWriter::OpenExisting(const std::string& path, int64_t rows,
                                                              int64_t columns) {
  const int file = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (file < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  const std::string want = MakeHeader(rows, columns);
  NpyColumnWriter writer(file, path, rows, columns, static_cast<int64_t>(want.size()));
  std::string header(want.size(), '\0');
  const bool read =
      pread(file, header.data(), header.size(), 0) == static_cast<ssize_t>(header.size());
  const int64_t total = NpyFileBytes(rows, columns);
  struct stat info {};
  if (!read || header != want || fstat(file, &info) != 0 || !S_ISREG(info.st_mode) ||
      info.st_size != total) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not the ", rows, " x ", columns,
                                                      " float32 .npy file of the interrupted run (",
                                                      total, " bytes)"));
  }
  writer.OpenDirect();
  return writer;
}

NpyColumnWriter::NpyColumnWriter(NpyColumnWriter&& other) noexcept
    : file_(std::exchange(other.file_, -1)),
      direct_(std::exchange(other.direct_, -1)),
      staging_(std::move(other.staging_)),
      path_(std::move(other.path_)),
      rows_(other.rows_),
      columns_(other.columns_),
      data_offset_(other.data_offset_) {}

NpyColumnWriter::~NpyColumnWriter() { Close().IgnoreError(); }

void NpyColumnWriter::FreeAligned::operator()(char* p) const { std::free(p); }

void NpyColumnWriter::OpenDirect() {
  direct_ = open(path_.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  if (direct_ < 0) return;  // the file system does not allow it
  void* staging = nullptr;
  if (posix_memalign(&staging, kDirectAlignment, kStagingBytes) != 0) {
    close(std::exchange(direct_, -1));
    return;
  }
  staging_.reset(static_cast<char*>(staging));
}

absl::Status NpyColumnWriter::WriteColumns(int64_t first, int64_t count, const float* values) {
  const auto bytes = static_cast<size_t>(std::max<int64_t>(0, rows_ * count)) * sizeof(float);
  return WriteColumns(first, count,
                      {std::string_view(reinterpret_cast<const char*>(values), bytes)});
}

absl::Status NpyColumnWriter::WriteColumns(int64_t first, int64_t count, const BytePieces& pieces) {
  if (first < 0 || count < 0 || first + count > columns_) {
    return absl::OutOfRangeError(absl::StrCat("columns [", first, ", ", first + count,
                                              ") outside the ", columns_, " columns of ", path_));
  }
  const int64_t bytes = rows_ * count * 4;
  if (PiecesSize(pieces) != bytes) {
    return absl::InvalidArgumentError(absl::StrCat(PiecesSize(pieces), " bytes for ", count,
                                                   " columns of ", rows_, " rows of ", path_));
  }
  const int64_t begin = data_offset_ + first * rows_ * 4, end = begin + bytes;
  // The whole blocks inside [begin, end), if any, go direct.
  const int64_t inner_begin = (begin + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
  const int64_t inner_end = end / kDirectAlignment * kDirectAlignment;
  if (direct_ < 0 || inner_end <= inner_begin) return WriteCached(begin, pieces);
  RETURN_IF_ERROR(WriteCached(begin, PiecesRange(pieces, 0, inner_begin - begin)));
  RETURN_IF_ERROR(
      WriteDirect(inner_begin, PiecesRange(pieces, inner_begin - begin, inner_end - inner_begin)));
  return WriteCached(inner_end, PiecesRange(pieces, inner_end - begin, end - inner_end));
}

absl::Status NpyColumnWriter::WriteCached(int64_t offset, const BytePieces& pieces) {
  std::vector<iovec> vectors;
  for (std::string_view piece : pieces) {
    if (!piece.empty()) vectors.push_back({const_cast<char*>(piece.data()), piece.size()});
  }
  size_t next = 0;
  while (next < vectors.size()) {
    const int batch = static_cast<int>(std::min<size_t>(vectors.size() - next, IOV_MAX));
    const ssize_t written = pwritev(file_, vectors.data() + next, batch, offset);
    if (written <= 0) {
      if (written < 0 && errno == EINTR) continue;
      return WriteError();
    }
    offset += written;
    // Past what was written; a piece written in part is cut.
    auto left = static_cast<size_t>(written);
    while (left > 0 && left >= vectors[next].iov_len) left -= vectors[next++].iov_len;
    if (left > 0) {
      vectors[next].iov_base = static_cast<char*>(vectors[next].iov_base) + left;
      vectors[next].iov_len -= left;
    }
  }
  return absl::OkStatus();
}

absl::Status NpyColumnWriter::WriteDirect(int64_t offset, const BytePieces& pieces) {
  const int64_t size = PiecesSize(pieces);
  // One piece at an aligned address (a shared-memory slot's, placed for
  // this file) goes as it lies.
  const char* aligned =
      pieces.size() == 1 && reinterpret_cast<uintptr_t>(pieces[0].data()) % kDirectAlignment == 0
          ? pieces[0].data()
          : nullptr;
  for (int64_t done = 0; done < size;) {
    const int64_t n = std::min<int64_t>(kStagingBytes, size - done);
    const char* from = aligned != nullptr ? aligned + done : staging_.get();
    if (aligned == nullptr) CopyPieces(PiecesRange(pieces, done, n), staging_.get());
    int64_t put = 0;
    while (put < n) {
      const ssize_t written =
          pwrite(direct_, from + put, static_cast<size_t>(n - put), offset + done + put);
      if (written < 0 && errno == EINTR) continue;
      if (written < 0 && errno == EINVAL && put == 0) {
        // The file system took the open but not the write: the cache from now on.
        close(std::exchange(direct_, -1));
        return WriteCached(offset + done, PiecesRange(pieces, done, size - done));
      }
      // A short direct write ends on a block boundary; anything else is an error.
      if (written <= 0 || written % kDirectAlignment != 0) return WriteError();
      put += written;
    }
    done += n;
  }
  return absl::OkStatus();
}

absl::Status NpyColumnWriter::WriteError() const {
  return absl::InternalError(absl::StrCat("cannot write ", path_, ": ", std::strerror(errno)));
}

absl::Status NpyColumnWriter::Close() {
  bool failed = false;
  for (int* fd : {&direct_, &file_}) {
    if (*fd >= 0 && close(std::exchange(*fd, -1)) != 0) failed = true;
  }
  staging_.reset();
  if (failed) {
    return absl::InternalError(absl::StrCat("cannot close ", path_, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<NpyMatrix> ReadNpyMatrix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  ASSIGN_OR_RETURN(const std::string dict, ReadHeaderDict(in, path));
  ASSIGN_OR_RETURN(const std::string descr, DictValue(dict, "descr"));
  ASSIGN_OR_RETURN(const std::string order, DictValue(dict, "fortran_order"));
  ASSIGN_OR_RETURN(const std::string shape, DictValue(dict, "shape"));
  const bool f32 = descr == "'<f4'";
  const bool f64 = descr == "'<f8'";
  if (!f32 && !f64) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": dtype ", descr, " is not float32 or float64 ('<f4' or '<f8')"));
  }
  std::vector<std::string> dims = absl::StrSplit(
      absl::StripSuffix(absl::StripPrefix(shape, "("), ")"), ',', absl::SkipWhitespace());
  NpyMatrix m;
  if (dims.size() != 2 || !absl::SimpleAtoi(dims[0], &m.rows) ||
      !absl::SimpleAtoi(dims[1], &m.columns) || m.rows < 1 || m.columns < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": shape ", shape, " is not a 2-D matrix (issuers x scenarios)"));
  }
  const int64_t element_bytes = f32 ? 4 : 8;
  if (m.rows > std::numeric_limits<int64_t>::max() / element_bytes / m.columns) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": shape ", shape, " is too large for any file"));
  }
  const int64_t bytes = m.rows * m.columns * element_bytes;
  std::vector<char> raw;
  if (HasBytes(in, static_cast<uint64_t>(bytes))) raw.resize(static_cast<size_t>(bytes));
  if (raw.empty() || !in.read(raw.data(), static_cast<std::streamsize>(raw.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the data is shorter than ", bytes, " bytes for shape ", shape));
  }
  ConvertValues(raw, f32, order == "True", m);
  return m;
}

}  // namespace pricer
