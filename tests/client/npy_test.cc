#include "client/lib/npy.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace pricer {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed())))
      .string();
}

// Writes a .npy by hand, as NumPy lays it out (version 1.0, 64-byte aligned).
void WriteRawNpy(const std::string& path, const std::string& dict, const void* data, size_t bytes) {
  std::string header = dict;
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const char size[2] = {static_cast<char>(header.size() & 0xff),
                        static_cast<char>(header.size() >> 8)};
  out.write(size, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

TEST(NpyColumnWriter, ColumnsWrittenOutOfOrderReadBackInPlace) {
  const std::string path = TempPath("writer.npy");
  const int64_t rows = 3, columns = 5;
  auto writer = NpyColumnWriter::Create(path, rows, columns);
  ASSERT_TRUE(writer.ok()) << writer.status();
  // Chunks arrive in any order: columns [3, 5), then [0, 3).
  std::vector<float> late = {30, 31, 32, 40, 41, 42};
  std::vector<float> early = {0, 1, 2, 10, 11, 12, 20, 21, 22};
  ASSERT_TRUE(writer->WriteColumns(3, 2, late.data()).ok());
  ASSERT_TRUE(writer->WriteColumns(0, 3, early.data()).ok());
  ASSERT_TRUE(writer->Close().ok());

  // The data starts at a multiple of 64 bytes, as NumPy writes it.
  EXPECT_EQ(std::filesystem::file_size(path) % 64, (rows * columns * 4) % 64);
  auto matrix = ReadNpyMatrix(path);
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ(matrix->rows, rows);
  EXPECT_EQ(matrix->columns, columns);
  for (int64_t j = 0; j < columns; ++j) {
    for (int64_t i = 0; i < rows; ++i) {
      EXPECT_EQ(matrix->values[j * rows + i], 10.0f * j + i) << i << "," << j;
    }
  }
  std::filesystem::remove(path);
}

// Chunks of 1-7 columns of 1,001 rows (4,004 bytes each) start and end
// anywhere in a 4 KiB block: their whole blocks go direct where the file
// system allows it, the ends through the cache, and the file must hold every
// value whatever order they come in and however their pieces are cut.
TEST(NpyColumnWriter, ChunksCutAnywhereInPiecesReadBackInPlace) {
  const std::string path = TempPath("pieces.npy");
  const int64_t rows = 1001, columns = 60;
  std::vector<float> all(static_cast<size_t>(rows * columns));
  for (size_t k = 0; k < all.size(); ++k) all[k] = static_cast<float>(k) * 0.5f;
  std::mt19937 random(17);
  std::vector<std::pair<int64_t, int64_t>> chunks;  // first column, count
  for (int64_t first = 0; first < columns;) {
    const int64_t count = std::min<int64_t>(columns - first, 1 + random() % 7);
    chunks.emplace_back(first, count);
    first += count;
  }
  std::shuffle(chunks.begin(), chunks.end(), random);
  auto writer = NpyColumnWriter::Create(path, rows, columns);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (const auto& [first, count] : chunks) {
    const char* bytes = reinterpret_cast<const char*>(all.data() + first * rows);
    const auto size = static_cast<size_t>(count * rows * 4);
    BytePieces pieces;
    for (size_t at = 0; at < size;) {
      const size_t n = std::min<size_t>(size - at, 1 + random() % 5000);
      pieces.emplace_back(bytes + at, n);
      at += n;
    }
    ASSERT_TRUE(writer->WriteColumns(first, count, pieces).ok()) << first;
  }
  ASSERT_TRUE(writer->Close().ok());
  auto matrix = ReadNpyMatrix(path);
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ(matrix->values, all);
  std::filesystem::remove(path);
}

// A shared-memory ring places each chunk's values as NpyColumnPhase says:
// at the address the chunk's column has in the file, modulo 4 KiB, so that
// its whole blocks go direct from there. Columns [first, first + columns) of
// a file written so, by chunks of 3 columns of 1,001 rows (placed in an
// aligned buffer as a ring's slot would hold them), read back in place.
TEST(NpyColumnWriter, ChunksPlacedByTheRingPhaseReadBackInPlace) {
  const std::string path = TempPath("phase.npy");
  const int64_t rows = 1001, columns = 30, first = 7;
  const int32_t phase = NpyColumnPhase(rows, columns, first);
  ASSERT_GE(phase, 0);
  ASSERT_LT(phase, 4096);
  auto writer = NpyColumnWriter::Create(path, rows, columns);
  ASSERT_TRUE(writer.ok()) << writer.status();
  const auto data_offset =
      static_cast<int64_t>(std::filesystem::file_size(path)) - rows * columns * 4;
  std::vector<float> all(static_cast<size_t>(rows * columns));
  for (size_t k = 0; k < all.size(); ++k) all[k] = static_cast<float>(k) + 0.25f;
  constexpr int64_t kCount = 3;
  std::vector<char> slot(static_cast<size_t>(2 * 4096 + kCount * rows * 4));
  char* aligned = slot.data() + (4096 - reinterpret_cast<uintptr_t>(slot.data()) % 4096);
  for (int64_t c = 0; c < columns; c += kCount) {
    const int64_t column = first + c;  // of the request, as a chunk names it
    const int64_t offset = (phase + 4 * rows * column) % 4096;
    EXPECT_EQ(offset, (data_offset + 4 * rows * c) % 4096) << column;
    const auto bytes = static_cast<size_t>(kCount * rows * 4);
    std::memcpy(aligned + offset, all.data() + c * rows, bytes);
    ASSERT_TRUE(writer->WriteColumns(c, kCount, {std::string_view(aligned + offset, bytes)}).ok());
  }
  ASSERT_TRUE(writer->Close().ok());
  auto matrix = ReadNpyMatrix(path);
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ(matrix->values, all);
  std::filesystem::remove(path);
}

TEST(NpyColumnWriter, RefusesPiecesOfTheWrongSize) {
  const std::string path = TempPath("short.npy");
  auto writer = NpyColumnWriter::Create(path, 2, 2);
  ASSERT_TRUE(writer.ok());
  const float values[3] = {1, 2, 3};
  const absl::Status s = writer->WriteColumns(
      0, 1, {std::string_view(reinterpret_cast<const char*>(values), sizeof(values))});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("12 bytes for 1 columns of 2 rows"), absl::string_view::npos) << s;
  std::filesystem::remove(path);
}

TEST(NpyColumnWriter, RefusesColumnsOutsideTheMatrix) {
  const std::string path = TempPath("outside.npy");
  auto writer = NpyColumnWriter::Create(path, 2, 2);
  ASSERT_TRUE(writer.ok());
  std::vector<float> values(4);
  EXPECT_EQ(writer->WriteColumns(1, 2, values.data()).code(), absl::StatusCode::kOutOfRange);
  std::filesystem::remove(path);
}

TEST(NpyColumnWriter, OpenExistingKeepsTheColumnsWrittenAndChecksTheShape) {
  const std::string path = TempPath("resumed.npy");
  const std::vector<float> first = {1, 2, 3, 4};
  {
    auto writer = NpyColumnWriter::Create(path, 2, 3);
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE(writer->WriteColumns(0, 2, first.data()).ok());
    // Not closed: a killed run. The columns are flushed as written.
  }
  {
    auto reopened = NpyColumnWriter::OpenExisting(path, 2, 3);
    ASSERT_TRUE(reopened.ok()) << reopened.status();
    const std::vector<float> last = {5, 6};
    ASSERT_TRUE(reopened->WriteColumns(2, 1, last.data()).ok());
    ASSERT_TRUE(reopened->Close().ok());
  }
  auto matrix = ReadNpyMatrix(path);
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ(matrix->values, (std::vector<float>{1, 2, 3, 4, 5, 6}));

  for (auto [rows, columns] : {std::pair<int64_t, int64_t>{2, 4}, {3, 2}}) {
    auto wrong = NpyColumnWriter::OpenExisting(path, rows, columns);
    EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition) << wrong.status();
    EXPECT_NE(wrong.status().message().find(path), absl::string_view::npos);
  }
  // A file of the right header but cut short is not it either.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 4);
  EXPECT_FALSE(NpyColumnWriter::OpenExisting(path, 2, 3).ok());
  std::filesystem::remove(path);
  EXPECT_EQ(NpyColumnWriter::OpenExisting(path, 2, 3).status().code(), absl::StatusCode::kNotFound);
}

TEST(ReadNpyMatrix, Float64CorderIsTransposedToColumnMajorFloat32) {
  const std::string path = TempPath("c_order.npy");
  // Row-major 2 x 3: element (i, j) = i + 0.25 * j.
  const double data[6] = {0.0, 0.25, 0.5, 1.0, 1.25, 1.5};
  WriteRawNpy(path, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", data,
              sizeof(data));
  auto matrix = ReadNpyMatrix(path);
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  ASSERT_EQ(matrix->rows, 2);
  ASSERT_EQ(matrix->columns, 3);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(matrix->values[j * 2 + i], static_cast<float>(i + 0.25 * j));
    }
  }
  std::filesystem::remove(path);
}

TEST(ReadNpyMatrix, NamesWhatIsWrong) {
  const std::string path = TempPath("bad.npy");
  const int32_t ints[4] = {1, 2, 3, 4};
  WriteRawNpy(path, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", ints,
              sizeof(ints));
  auto wrong_type = ReadNpyMatrix(path);
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("'<i4'"), absl::string_view::npos);

  const float floats[4] = {1, 2, 3, 4};
  WriteRawNpy(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", floats,
              sizeof(floats));
  auto one_dim = ReadNpyMatrix(path);
  ASSERT_FALSE(one_dim.ok());
  EXPECT_NE(one_dim.status().message().find("not a 2-D matrix"), absl::string_view::npos);

  WriteRawNpy(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 4), }", floats,
              sizeof(floats));
  auto short_data = ReadNpyMatrix(path);
  ASSERT_FALSE(short_data.ok());
  EXPECT_NE(short_data.status().message().find("shorter"), absl::string_view::npos);

  EXPECT_EQ(ReadNpyMatrix(path + ".missing").status().code(), absl::StatusCode::kNotFound);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pricer
