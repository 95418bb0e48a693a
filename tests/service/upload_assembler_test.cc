// The upload assembler's reservation against its MemoryAccount: taken at the
// first chunk for the declared size, given back by Drop() while the
// assembler lives (the reactor drops it before it finishes the call), and
// not given back twice when it goes.
#include "server/service/upload_assembler.h"

#include <vector>

#include "gtest/gtest.h"
#include "server/scheduler/memory_account.h"

namespace pricer {
namespace {

v1::ScenarioChunk FirstColumn(int64_t rows, int64_t columns) {
  const std::vector<float> values(static_cast<size_t>(rows), 1.0f);
  v1::ScenarioChunk chunk;
  chunk.set_rows(rows);
  chunk.set_columns(columns);
  chunk.set_values(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return chunk;
}

TEST(UploadAssemblerTest, DropGivesTheReservationBackAtOnceAndKeepsTheCounts) {
  MemoryAccount budget(1 << 20);
  {
    UploadAssembler matrix(1 << 20, budget);
    ASSERT_TRUE(matrix.Add(FirstColumn(100, 50)).ok());
    EXPECT_EQ(budget.in_use(), 100 * 50 * 4);  // the declared size
    matrix.Drop();
    EXPECT_EQ(budget.in_use(), 0);
    EXPECT_EQ(matrix.rows(), 100);
    EXPECT_EQ(matrix.columns(), 50);
    EXPECT_EQ(matrix.received(), 100 * 4);
    // Another upload may take the whole budget now.
    UploadAssembler next(1 << 20, budget);
    ASSERT_TRUE(next.Add(FirstColumn(1 << 8, 1 << 10)).ok());
    EXPECT_EQ(budget.in_use(), 1 << 20);
  }
  EXPECT_EQ(budget.in_use(), 0);  // the dropped one released nothing twice
}

}  // namespace
}  // namespace pricer
