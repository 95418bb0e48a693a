// The pool of pinned blocks (server/backends/cuda/pinned_pool.h) over host
// memory that counts its allocations and frees: a block comes back for the
// next shard instead of being freed (cudaFreeHost would synchronize the
// GPU), is counted in the pinned account only while in use, leaves it while
// chunks send from it, and the blocks in use and idle stay within the
// budget. Runs everywhere; the GPU's own pinned memory is the same code
// behind CudaPinned (cuda_engine_test, with a GPU).
#include "server/backends/cuda/pinned_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace pricer {
namespace {

struct CountedMemory {
  int allocations = 0;
  int frees = 0;
};

std::shared_ptr<PinnedPool> HostPool(std::shared_ptr<MemoryAccount> account,
                                     CountedMemory& counts) {
  BlockMemory memory;
  memory.allocate = [&counts](int64_t bytes, absl::string_view, void** out) {
    ++counts.allocations;
    *out = ::operator new[](static_cast<size_t>(bytes));
    return absl::OkStatus();
  };
  memory.free = [&counts](void* data) {
    ++counts.frees;
    ::operator delete[](data);
  };
  return PinnedPool::Make(std::move(account), std::move(memory));
}

TEST(PinnedPoolTest, ABlockGivenBackServesTheNextTakeUncountedMeanwhile) {
  auto account = std::make_shared<MemoryAccount>(1 << 20);
  CountedMemory counts;
  std::shared_ptr<PinnedPool> pool = HostPool(account, counts);
  const Buffer block = BufferOf<float>("pinned result block", 1000);
  void* first = nullptr;
  {
    absl::StatusOr<PinnedPool::Handle> taken = pool->Take(block);
    ASSERT_TRUE(taken.ok()) << taken.status();
    first = (*taken)->data;
    EXPECT_EQ(account->in_use(), 4000);
  }
  EXPECT_EQ(account->in_use(), 0);
  EXPECT_EQ(pool->idle_blocks(), 1u);
  EXPECT_EQ(pool->idle_bytes(), 4000);
  // The same block again, for a buffer it holds (not over twice its size).
  absl::StatusOr<PinnedPool::Handle> again = pool->Take(BufferOf<float>("smaller", 600));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->data, first);
  EXPECT_EQ(account->in_use(), 4000);  // counted at its own size
  // Too small a buffer for it: a new block.
  again->reset();
  absl::StatusOr<PinnedPool::Handle> small = pool->Take(BufferOf<float>("statistics", 10));
  ASSERT_TRUE(small.ok());
  EXPECT_NE((*small)->data, first);
  EXPECT_EQ(counts.allocations, 2);
  EXPECT_EQ(counts.frees, 0);
}

TEST(PinnedPoolTest, ASharedBlockLeavesTheAccountUntilItsLastChunkIsSent) {
  auto account = std::make_shared<MemoryAccount>(1 << 20);
  CountedMemory counts;
  std::shared_ptr<PinnedPool> pool = HostPool(account, counts);
  absl::StatusOr<PinnedPool::Handle> taken = pool->Take(BufferOf<float>("values", 1000));
  ASSERT_TRUE(taken.ok());
  std::shared_ptr<const void> chunks = pool->Share(*std::move(taken));
  EXPECT_EQ(account->in_use(), 0);
  EXPECT_EQ(pool->idle_blocks(), 0u);
  std::shared_ptr<const void> second_chunk = chunks;
  chunks.reset();
  EXPECT_EQ(pool->idle_blocks(), 0u);
  second_chunk.reset();
  EXPECT_EQ(pool->idle_blocks(), 1u);
  EXPECT_EQ(counts.frees, 0);
}

TEST(PinnedPoolTest, InUseAndIdleBlocksStayWithinTheBudget) {
  auto account = std::make_shared<MemoryAccount>(10'000);
  CountedMemory counts;
  std::shared_ptr<PinnedPool> pool = HostPool(account, counts);
  {
    absl::StatusOr<PinnedPool::Handle> a = pool->Take(BufferOf<char>("a", 4'000));
    absl::StatusOr<PinnedPool::Handle> b = pool->Take(BufferOf<char>("b", 4'000));
    ASSERT_TRUE(a.ok() && b.ok());
    // Over the budget: refused, naming the buffer, before any allocation.
    absl::StatusOr<PinnedPool::Handle> c =
        pool->Take(BufferOf<char>("pinned scenario block", 4'000));
    EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(c.status().message().find("pinned scenario block"), std::string::npos);
    EXPECT_EQ(counts.allocations, 2);
  }
  EXPECT_EQ(pool->idle_bytes(), 8'000);
  // A block that fits the budget only without the idle ones: they go first.
  absl::StatusOr<PinnedPool::Handle> large = pool->Take(BufferOf<char>("large", 9'000));
  ASSERT_TRUE(large.ok()) << large.status();
  EXPECT_EQ(counts.frees, 2);
  EXPECT_EQ(pool->idle_bytes(), 0);
  EXPECT_LE(account->in_use() + pool->idle_bytes(), account->budget());
}

TEST(PinnedPoolTest, AtMostKMaxIdleBlocksWaitAndTheRestAreFreed) {
  auto account = std::make_shared<MemoryAccount>(1 << 20);
  CountedMemory counts;
  std::shared_ptr<PinnedPool> pool = HostPool(account, counts);
  std::vector<PinnedPool::Handle> blocks;
  for (size_t k = 0; k < PinnedPool::kMaxIdle + 3; ++k) {
    absl::StatusOr<PinnedPool::Handle> b = pool->Take(BufferOf<char>("block", 100));
    ASSERT_TRUE(b.ok());
    blocks.push_back(*std::move(b));
  }
  blocks.clear();
  EXPECT_EQ(pool->idle_blocks(), PinnedPool::kMaxIdle);
  EXPECT_EQ(counts.frees, 3);
  pool.reset();  // the idle ones with the pool
  EXPECT_EQ(counts.frees, static_cast<int>(PinnedPool::kMaxIdle) + 3);
}

}  // namespace
}  // namespace pricer
