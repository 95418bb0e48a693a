#include "tests/store/scenario_store_test_util.h"

#include <openssl/evp.h>
#include <stdlib.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <filesystem>

namespace pricer {

std::vector<float> Matrix(int64_t rows, int64_t columns, int salt) {
  std::vector<float> values(static_cast<size_t>(rows * columns));
  for (size_t k = 0; k < values.size(); ++k) {
    values[k] = static_cast<float>(k % 1000) * 0.25f - 3.0f + static_cast<float>(salt);
  }
  return values;
}

void AppendLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int b = 0; b < bytes; ++b) out->push_back(static_cast<char>((value >> (8 * b)) & 0xff));
}

std::string ExpectedId(int64_t rows, int64_t columns, const std::vector<float>& values) {
  std::string buffer;
  AppendLittleEndian(static_cast<uint64_t>(rows), 8, &buffer);
  AppendLittleEndian(static_cast<uint64_t>(columns), 8, &buffer);
  for (float v : values) AppendLittleEndian(std::bit_cast<uint32_t>(v), 4, &buffer);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EXPECT_EQ(EVP_Digest(buffer.data(), buffer.size(), digest, &size, EVP_sha256(), nullptr), 1);
  EXPECT_EQ(size, 32u);
  std::string hex;
  for (unsigned int k = 0; k < size; ++k) {
    char two[3];
    std::snprintf(two, sizeof(two), "%02x", digest[k]);
    hex += two;
  }
  return hex;
}

std::vector<float> Values(const ScenarioMatrix& matrix) {
  std::vector<float> out(static_cast<size_t>(matrix.rows() * matrix.columns()));
  matrix.CopyColumns(0, matrix.columns(), out.data());
  return out;
}

void ScenarioStoreTest::SetUp() {
  std::string pattern = (std::filesystem::temp_directory_path() / "scenario_store_XXXXXX");
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  dir_ = pattern;
}

void ScenarioStoreTest::TearDown() { std::filesystem::remove_all(dir_); }

std::vector<std::string> ScenarioStoreTest::Files() const {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void ScenarioStoreTest::FlipByte(const std::string& id, std::streamoff offset) const {
  std::fstream file(PathOf(id), std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(file.is_open());
  file.seekg(offset);
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(~byte);
  file.seekp(offset);
  file.write(&byte, 1);
  ASSERT_TRUE(file.good());
}

}  // namespace pricer
