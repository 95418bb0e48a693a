#include "server/scheduler/buffer_pool.h"

#include <memory>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "server/scheduler/result_stream.h"

namespace pricer {
namespace {

TEST(BufferPool, ABufferComesBackOnlyWhenItsLastShareIsGone) {
  std::shared_ptr<BufferPool> pool = BufferPool::Make();
  EXPECT_TRUE(pool->Take(100).empty());  // none free yet
  std::vector<float> values(1000, 2.5f);
  const float* address = values.data();
  std::shared_ptr<const std::vector<float>> shared = pool->Share(std::move(values));
  std::shared_ptr<const std::vector<float>> chunk = shared;  // a chunk cut from it
  shared.reset();
  EXPECT_EQ(pool->free_buffers(), 0u);
  EXPECT_TRUE(pool->Take(100).empty());
  chunk.reset();
  EXPECT_EQ(pool->free_buffers(), 1u);
  EXPECT_TRUE(pool->Take(1001).empty());  // too small for this
  std::vector<float> again = pool->Take(500);
  EXPECT_EQ(again.data(), address);  // the same memory, values as they were
  EXPECT_EQ(again.size(), 1000u);
  EXPECT_EQ(again[999], 2.5f);
  EXPECT_EQ(pool->free_buffers(), 0u);
}

TEST(BufferPool, TakesTheSmallestThatFitsAndKeepsABoundedNumber) {
  std::shared_ptr<BufferPool> pool = BufferPool::Make();
  for (size_t n = 1; n <= BufferPool::kMaxFree + 3; ++n) {
    pool->Share(std::vector<float>(n * 100));  // released at once
  }
  EXPECT_EQ(pool->free_buffers(), BufferPool::kMaxFree);
  EXPECT_EQ(pool->Take(250).capacity(), 300u);
  EXPECT_EQ(pool->Take(250).capacity(), 400u);
}

TEST(BufferPool, SharesOutliveThePoolsOwner) {
  std::shared_ptr<const std::vector<float>> shared;
  {
    std::shared_ptr<BufferPool> pool = BufferPool::Make();
    shared = pool->Share(std::vector<float>(10, 1.0f));
  }
  // The job (the pool's owner) is gone while gRPC still sends the chunk.
  EXPECT_EQ((*shared)[9], 1.0f);
  shared.reset();  // returns it to a pool that only the share kept alive
}

// A shard's contribution arrays: shared through the pool, cut into chunks,
// back in the pool when the last chunk is gone, and the next shard's Resize
// fills them again instead of allocating (zeroed, whatever they held).
TEST(BufferPool, ContributionArraysComeBackAndAreReused) {
  std::shared_ptr<BufferPool> pool = BufferPool::Make();
  StatisticsSelection selection;
  selection.es = selection.es_contributions = {0.975};
  selection.delta = true;
  auto take = [&](size_t floats) { return pool->Take(floats); };
  ColumnStatistics shard;
  shard.Resize(selection, 8, 5, 2, take);
  shard.contributions[0][39] = 4.0f;
  const float* contributions = shard.contributions[0].data();
  std::optional<ContributionBlocks> chunk;
  {
    const ContributionBlocks blocks = ContributionBlocks::Take(&shard, pool.get());
    chunk = blocks.Range(6, 2);
  }
  EXPECT_EQ(pool->free_buffers(), 0u);  // the chunk holds both arrays
  EXPECT_EQ(chunk->contributions[0].data()[9], 4.0f);
  chunk.reset();
  EXPECT_EQ(pool->free_buffers(), 2u);
  ColumnStatistics next;
  next.Resize(selection, 8, 5, 2, take);
  EXPECT_EQ(pool->free_buffers(), 0u);
  EXPECT_EQ(next.contributions[0].data(), contributions);
  EXPECT_EQ(next.contributions[0].size(), 40u);
  EXPECT_EQ(next.contributions[0][39], 0.0f);
  EXPECT_EQ(next.delta[0].size(), 16u);
}

}  // namespace
}  // namespace pricer
