#include "server/scheduler/buffer_pool.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace pricer
