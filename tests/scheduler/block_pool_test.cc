// The pool of reused blocks (server/scheduler/block_pool.h) over host
// memory that counts its allocations and frees: a block comes back for the
// next shard or job instead of being freed, is counted in the account only
// while in use, leaves it while chunks send from it, and the blocks in use
// and idle stay within the budget. The cpu backend's pool is the same code
// over BlockPool::Host() (cpu_device_test); a GPU's over its pinned memory
// (CudaPinnedMemory: cuda_engine_test, with a GPU).
#include "server/scheduler/block_pool.h"

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

std::shared_ptr<BlockPool> HostPool(std::shared_ptr<MemoryAccount> account, CountedMemory& counts,
                                    BlockPool::Reuse reuse = BlockPool::Reuse::kUpToTwice,
                                    size_t max_idle = BlockPool::kMaxIdle) {
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
  return BlockPool::Make(std::move(account), std::move(memory), reuse, max_idle);
}

TEST(BlockPoolTest, ABlockGivenBackServesTheNextTakeUncountedMeanwhile) {
  auto account = std::make_shared<MemoryAccount>(1 << 20);
  CountedMemory counts;
  std::shared_ptr<BlockPool> pool = HostPool(account, counts);
  const Buffer block = BufferOf<float>("pinned result block", 1000);
  void* first = nullptr;
  {
    absl::StatusOr<BlockPool::Handle> taken = pool->Take(block);
    ASSERT_TRUE(taken.ok()) << taken.status();
    first = (*taken)->data;
    EXPECT_EQ(account->in_use(), 4000);
  }
  EXPECT_EQ(account->in_use(), 0);
  EXPECT_EQ(pool->idle_blocks(), 1u);
  EXPECT_EQ(pool->idle_bytes(), 4000);
  // The same block again, for a buffer it holds (not over twice its size).
  absl::StatusOr<BlockPool::Handle> again = pool->Take(BufferOf<float>("smaller", 600));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->data, first);
  EXPECT_EQ(account->in_use(), 4000);  // counted at its own size
  // Too small a buffer for it: a new block.
  again->reset();
  absl::StatusOr<BlockPool::Handle> small = pool->Take(BufferOf<float>("statistics", 10));
  ASSERT_TRUE(small.ok());
  EXPECT_NE((*small)->data, first);
  EXPECT_EQ(counts.allocations, 2);
  EXPECT_EQ(counts.frees, 0);
}

TEST(BlockPoolTest, ASharedBlockLeavesTheAccountUntilItsLastChunkIsSent) {
  auto account = std::make_shared<MemoryAccount>(1 << 20);
  CountedMemory counts;
  std::shared_ptr<BlockPool> pool = HostPool(account, counts);
  absl::StatusOr<BlockPool::Handle> taken = pool->Take(BufferOf<float>("values", 1000));
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

TEST(BlockPoolTest, InUseAndIdleBlocksStayWithinTheBudget) {
  auto account = std::make_shared<MemoryAccount>(10'000);
  CountedMemory counts;
  std::shared_ptr<BlockPool> pool = HostPool(account, counts);
  {
    absl::StatusOr<BlockPool::Handle> a = pool->Take(BufferOf<char>("a", 4'000));
    absl::StatusOr<BlockPool::Handle> b = pool->Take(BufferOf<char>("b", 4'000));
    ASSERT_TRUE(a.ok() && b.ok());
    // Over the budget: refused, naming the buffer, before any allocation.
    absl::StatusOr<BlockPool::Handle> c =
        pool->Take(BufferOf<char>("pinned scenario block", 4'000));
    EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(c.status().message().find("pinned scenario block"), std::string::npos);
    EXPECT_EQ(counts.allocations, 2);
  }
  EXPECT_EQ(pool->idle_bytes(), 8'000);
  // A block that fits the budget only without the idle ones: they go first.
  absl::StatusOr<BlockPool::Handle> large = pool->Take(BufferOf<char>("large", 9'000));
  ASSERT_TRUE(large.ok()) << large.status();
  EXPECT_EQ(counts.frees, 2);
  EXPECT_EQ(pool->idle_bytes(), 0);
  EXPECT_LE(account->in_use() + pool->idle_bytes(), account->budget());
}

TEST(BlockPoolTest, AnIdleBlockTooLargeToCountNowGivesWayToOneOfTheBuffersSize) {
  auto account = std::make_shared<MemoryAccount>(10'000);
  CountedMemory counts;
  std::shared_ptr<BlockPool> pool = HostPool(account, counts);
  ASSERT_TRUE(pool->Take(BufferOf<char>("large", 6'000)).ok());  // given back at once
  Reservation other;
  ASSERT_TRUE(Reservation::Reserve(*account, BufferOf<char>("ST", 5'000), &other).ok());
  // The idle block would count 6,000 of the 5,000 left: a new one of 3,500.
  absl::StatusOr<BlockPool::Handle> block = pool->Take(BufferOf<char>("SC", 3'500));
  ASSERT_TRUE(block.ok()) << block.status();
  EXPECT_EQ(account->in_use(), 8'500);
  EXPECT_EQ(counts.allocations, 2);
  EXPECT_EQ(counts.frees, 1);  // the large one, for the budget
  EXPECT_LE(account->in_use() + pool->idle_bytes(), account->budget());
}

TEST(BlockPoolTest, ExactSizeReuseTakesOnlyABlockOfTheBuffersSize) {
  auto account = std::make_shared<MemoryAccount>(1 << 20);
  CountedMemory counts;
  std::shared_ptr<BlockPool> pool = HostPool(account, counts, BlockPool::Reuse::kExactSize);
  void* first = nullptr;
  {
    absl::StatusOr<BlockPool::Handle> block = pool->Take(BufferOf<float>("SC", 1000));
    ASSERT_TRUE(block.ok());
    first = (*block)->data;
  }
  absl::StatusOr<BlockPool::Handle> smaller = pool->Take(BufferOf<float>("ST", 900));
  ASSERT_TRUE(smaller.ok());
  EXPECT_NE((*smaller)->data, first);
  EXPECT_EQ(account->in_use(), 3600);  // counted as the engine committed it
  absl::StatusOr<BlockPool::Handle> same = pool->Take(BufferOf<float>("SC", 1000));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*same)->data, first);
  EXPECT_EQ(counts.allocations, 2);
}

TEST(BlockPoolTest, FitIdleFreesIdleBlocksForWhatTheAccountsOtherUsersTake) {
  auto account = std::make_shared<MemoryAccount>(10'000);
  CountedMemory counts;
  std::shared_ptr<BlockPool> pool = HostPool(account, counts);
  // Two blocks in use at once, then given back.
  std::vector<BlockPool::Handle> blocks;
  for (int64_t bytes : {3'000, 5'000}) blocks.push_back(*pool->Take(BufferOf<char>("b", bytes)));
  blocks.clear();
  ASSERT_EQ(pool->idle_bytes(), 8'000);
  pool->FitIdle(2'000);  // fits beside both
  EXPECT_EQ(pool->idle_bytes(), 8'000);
  pool->FitIdle(4'000);  // the larger one goes
  EXPECT_EQ(pool->idle_bytes(), 3'000);
  EXPECT_EQ(counts.frees, 1);
  Reservation other;
  ASSERT_TRUE(Reservation::Reserve(*account, BufferOf<char>("ST", 4'000), &other).ok());
  pool->FitIdle(4'000);  // 4,000 in use, 3,000 idle: the last one goes too
  EXPECT_EQ(pool->idle_blocks(), 0u);
  EXPECT_EQ(counts.frees, 2);
}

TEST(BlockPoolTest, HostMemoryHoldsWhatIsWrittenUntilTheNextTake) {
  auto account = std::make_shared<MemoryAccount>(1 << 20);
  std::shared_ptr<BlockPool> pool = BlockPool::Make(account, BlockPool::Host());
  float* data = nullptr;
  {
    absl::StatusOr<BlockPool::Handle> block = pool->Take(BufferOf<float>("SC", 1000));
    ASSERT_TRUE(block.ok());
    data = (*block)->as<float>();
    for (int i = 0; i < 1000; ++i) data[i] = static_cast<float>(i);
  }
  absl::StatusOr<BlockPool::Handle> again = pool->Take(BufferOf<float>("SC", 1000));
  ASSERT_TRUE(again.ok());
  ASSERT_EQ((*again)->as<float>(), data);
  EXPECT_EQ(data[999], 999.0f);
}

TEST(BlockPoolTest, AtMostKMaxIdleBlocksWaitAndTheRestAreFreed) {
  auto account = std::make_shared<MemoryAccount>(1 << 20);
  CountedMemory counts;
  std::shared_ptr<BlockPool> pool = HostPool(account, counts);
  std::vector<BlockPool::Handle> blocks;
  for (size_t k = 0; k < BlockPool::kMaxIdle + 3; ++k) {
    absl::StatusOr<BlockPool::Handle> b = pool->Take(BufferOf<char>("block", 100));
    ASSERT_TRUE(b.ok());
    blocks.push_back(*std::move(b));
  }
  blocks.clear();
  EXPECT_EQ(pool->idle_blocks(), BlockPool::kMaxIdle);
  EXPECT_EQ(counts.frees, 3);
  pool.reset();  // the idle ones with the pool
  EXPECT_EQ(counts.frees, static_cast<int>(BlockPool::kMaxIdle) + 3);
}

TEST(BlockPoolTest, APoolKeepsAsManyIdleBlocksAsItsMakerSays) {
  auto account = std::make_shared<MemoryAccount>(1 << 20);
  CountedMemory counts;
  constexpr size_t kKept = BlockPool::kMaxIdle + 4;  // a cpu device of 5 threads
  std::shared_ptr<BlockPool> pool = HostPool(account, counts, BlockPool::Reuse::kExactSize, kKept);
  std::vector<BlockPool::Handle> blocks;
  for (size_t k = 0; k < kKept + 2; ++k) blocks.push_back(*pool->Take(BufferOf<char>("b", 100)));
  blocks.clear();
  EXPECT_EQ(pool->idle_blocks(), kKept);
  EXPECT_EQ(counts.frees, 2);
}

TEST(BlockPoolTest, TheOldestIdleBlockGivesWayToOneGivenBack) {
  auto account = std::make_shared<MemoryAccount>(1 << 20);
  CountedMemory counts;
  std::shared_ptr<BlockPool> pool = HostPool(account, counts, BlockPool::Reuse::kExactSize, 1);
  absl::StatusOr<BlockPool::Handle> older = pool->Take(BufferOf<char>("ST", 100));
  absl::StatusOr<BlockPool::Handle> newer = pool->Take(BufferOf<char>("SC", 200));
  ASSERT_TRUE(older.ok() && newer.ok());
  older->reset();
  newer->reset();  // the ST block is freed for it
  EXPECT_EQ(counts.frees, 1);
  EXPECT_EQ(pool->idle_bytes(), 200);
  ASSERT_TRUE(pool->Take(BufferOf<char>("SC", 200)).ok());
  EXPECT_EQ(counts.allocations, 2);
}

}  // namespace
}  // namespace pricer
