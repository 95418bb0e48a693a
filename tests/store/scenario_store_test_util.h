// Shared pieces of the ScenarioStore tests (scenario_store_*_test.cc):
// deterministic matrices, the set id recomputed byte by byte, the values of a
// stored set, and a fixture with a fresh directory of real files.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "server/store/scenario_store.h"

namespace pricer {

// A deterministic rows x columns matrix; `salt` makes different ones.
std::vector<float> Matrix(int64_t rows, int64_t columns, int salt = 0);

// Appends the low `bytes` bytes of `value`, least significant first.
void AppendLittleEndian(uint64_t value, int bytes, std::string* out);

// SHA-256 over rows, columns (int64, little-endian) and the float32 values
// (little-endian), as lowercase hex, built here byte by byte.
std::string ExpectedId(int64_t rows, int64_t columns, const std::vector<float>& values);

// Columns [0, columns) of a stored set, column-major.
std::vector<float> Values(const ScenarioMatrix& matrix);

// A fresh directory, removed with everything in it at the end of the test.
class ScenarioStoreTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // The names of the files in the directory.
  std::vector<std::string> Files() const;
  std::string PathOf(const std::string& id) const { return dir_ + "/" + id + ".set"; }

  // Flips the bits of the byte at `offset` of a set's file.
  void FlipByte(const std::string& id, std::streamoff offset) const;

  std::string dir_;
};

}  // namespace pricer
