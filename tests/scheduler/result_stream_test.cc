#include "server/scheduler/result_stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace pricer {
namespace {

// A scenario chunk of `floats` values (4 bytes each) starting at `begin`.
ResultChunk Chunk(int64_t begin, int64_t floats) {
  ResultChunk chunk;
  chunk.begin = begin;
  chunk.end = begin + 1;
  chunk.rows = floats;
  chunk.values = SharedFloats(std::vector<float>(static_cast<size_t>(floats), static_cast<float>(begin)));
  return chunk;
}

TEST(ResultChunkTest, PayloadBytesCountsValuesAndStatistics) {
  ResultChunk chunk = Chunk(0, 10);
  EXPECT_EQ(chunk.payload_bytes(), 40);
  // Basic statistics: V0, mean, stddev, min, max.
  chunk.statistics.Resize(StatisticsSelection::Basic(), 3);
  EXPECT_EQ(chunk.payload_bytes(), 40 + 3 * 5 * 8);
  // Every quantile, VaR and ES level is one more float64 per column.
  StatisticsSelection risk;
  risk.quantiles = {0.5};
  risk.var = {0.99, 0.975};
  risk.es = {0.99};
  ResultChunk risk_chunk = Chunk(0, 10);
  risk_chunk.statistics.Resize(risk, 3);
  EXPECT_EQ(risk_chunk.payload_bytes(), 40 + 3 * (1 + 1 + 2 + 1) * 8);
}

TEST(ResultStreamTest, TryReserveRespectsTheBoundUnlessNothingIsPending) {
  ResultStream stream(100, nullptr);
  EXPECT_TRUE(stream.TryReserve(60));
  EXPECT_FALSE(stream.TryReserve(50));  // 110 > 100
  EXPECT_EQ(stream.pending_bytes(), 60);
  EXPECT_TRUE(stream.TryReserve(40));  // exactly 100
  EXPECT_FALSE(stream.TryReserve(1));
  EXPECT_EQ(stream.pending_bytes(), 100);
  stream.Unreserve(100);
  EXPECT_EQ(stream.pending_bytes(), 0);
  // Nothing pending: a reservation larger than the bound still goes through,
  // so one oversized shard cannot block a job forever.
  EXPECT_TRUE(stream.TryReserve(1000));
  EXPECT_FALSE(stream.TryReserve(1));
  EXPECT_EQ(stream.pending_bytes(), 1000);
}

TEST(ResultStreamTest, PopReturnsChunksInPushOrder) {
  ResultStream stream(1 << 20, nullptr);
  EXPECT_FALSE(stream.Pop().has_value());
  for (int64_t k = 0; k < 5; ++k) {
    ASSERT_TRUE(stream.TryReserve(4 * (k + 1)));
    stream.Push(Chunk(k, k + 1));
  }
  EXPECT_EQ(stream.pending_bytes(), 4 * (1 + 2 + 3 + 4 + 5));
  for (int64_t k = 0; k < 5; ++k) {
    std::optional<ResultChunk> chunk = stream.Pop();
    ASSERT_TRUE(chunk.has_value());
    EXPECT_EQ(chunk->begin, k);
    EXPECT_EQ(chunk->values.size(), static_cast<size_t>(k + 1));
    // Popped but not yet sent: its bytes stay pending until released.
    stream.Release(chunk->payload_bytes());
  }
  EXPECT_FALSE(stream.Pop().has_value());
  EXPECT_EQ(stream.pending_bytes(), 0);
}

TEST(ResultStreamTest, CloseOkKeepsQueuedChunksUntilTheyArePopped) {
  ResultStream stream(1 << 20, nullptr);
  absl::Status status = absl::UnknownError("unset");
  EXPECT_FALSE(stream.Drained(&status));
  ASSERT_TRUE(stream.TryReserve(8));
  stream.Push(Chunk(0, 1));
  stream.Push(Chunk(1, 1));
  EXPECT_FALSE(stream.closed());
  stream.Close(absl::OkStatus());
  EXPECT_TRUE(stream.closed());
  EXPECT_FALSE(stream.Drained(&status));
  ASSERT_TRUE(stream.Pop().has_value());
  EXPECT_FALSE(stream.Drained(&status));
  ASSERT_TRUE(stream.Pop().has_value());
  ASSERT_TRUE(stream.Drained(&status));
  EXPECT_TRUE(status.ok()) << status;
  // A later close is ignored.
  stream.Close(absl::InternalError("late"));
  ASSERT_TRUE(stream.Drained(&status));
  EXPECT_TRUE(status.ok()) << status;
}

TEST(ResultStreamTest, CloseWithAnErrorDropsQueuedChunks) {
  ResultStream stream(1 << 20, nullptr);
  ASSERT_TRUE(stream.TryReserve(12));
  for (int64_t k = 0; k < 3; ++k) stream.Push(Chunk(k, 1));
  stream.Close(absl::CancelledError("client went away"));
  EXPECT_FALSE(stream.Pop().has_value());
  EXPECT_EQ(stream.pending_bytes(), 0);
  absl::Status status;
  ASSERT_TRUE(stream.Drained(&status));
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(status.message(), "client went away");
}

TEST(ResultStreamTest, PushAfterCloseIsDroppedAndItsBytesReleased) {
  ResultStream stream(1 << 20, nullptr);
  ASSERT_TRUE(stream.TryReserve(40));
  stream.Close(absl::OkStatus());
  stream.Push(Chunk(0, 10));
  EXPECT_FALSE(stream.Pop().has_value());
  EXPECT_EQ(stream.pending_bytes(), 0);
  absl::Status status = absl::UnknownError("unset");
  ASSERT_TRUE(stream.Drained(&status));
  EXPECT_TRUE(status.ok());
}

TEST(ResultStreamTest, ListenerRunsOnPushAndOnClose) {
  ResultStream stream(1 << 20, nullptr);
  int calls = 0;
  int64_t seen = 0;
  stream.SetListener([&] {
    ++calls;
    // The listener may read the stream: it runs without the stream's lock.
    while (std::optional<ResultChunk> chunk = stream.Pop()) seen += chunk->begin + 1;
  });
  ASSERT_TRUE(stream.TryReserve(8));
  stream.Push(Chunk(0, 1));
  EXPECT_EQ(calls, 1);
  stream.Push(Chunk(1, 1));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(seen, 1 + 2);
  stream.Close(absl::OkStatus());
  EXPECT_EQ(calls, 3);
  stream.DetachListener();
}

TEST(ResultStreamTest, DetachListenerWaitsForARunningListener) {
  ResultStream stream(1 << 20, nullptr);
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  std::atomic<int> calls{0};
  stream.SetListener([&] {
    ++calls;
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    finished = true;
  });
  ASSERT_TRUE(stream.TryReserve(4));
  std::thread producer([&] { stream.Push(Chunk(0, 1)); });
  while (!started) std::this_thread::yield();
  stream.DetachListener();
  // Returned only after the listener did.
  EXPECT_TRUE(finished);
  producer.join();
  // Detached: no more calls.
  stream.Close(absl::OkStatus());
  EXPECT_EQ(calls, 1);
}

TEST(ResultStreamTest, DestroyedStreamGivesBackItsSharedBytes) {
  auto shared = std::make_shared<PendingBytes>(100);
  ResultStream kept(100, nullptr, shared);
  ASSERT_TRUE(kept.TryReserve(10));
  {
    // A stream whose reader went away with chunks still queued.
    ResultStream dropped(100, nullptr, shared);
    ASSERT_TRUE(dropped.TryReserve(60));
    dropped.Push(Chunk(0, 15));
    EXPECT_EQ(shared->used(), 70);
    EXPECT_FALSE(kept.TryReserve(40));  // 110 > 100 over both streams
  }
  EXPECT_EQ(shared->used(), 10);
  EXPECT_TRUE(kept.TryReserve(40));
}

TEST(ResultStreamTest, ReleaseRunsOnSpace) {
  int space_calls = 0;
  ResultStream stream(100, [&] { ++space_calls; });
  ASSERT_TRUE(stream.TryReserve(100));
  EXPECT_FALSE(stream.TryReserve(10));
  stream.Push(Chunk(0, 25));
  EXPECT_EQ(space_calls, 0);
  std::optional<ResultChunk> chunk = stream.Pop();
  ASSERT_TRUE(chunk.has_value());
  EXPECT_EQ(space_calls, 0);
  stream.Release(chunk->payload_bytes());
  EXPECT_EQ(space_calls, 1);
  EXPECT_EQ(stream.pending_bytes(), 0);
  // Room again.
  EXPECT_TRUE(stream.TryReserve(10));
  stream.Unreserve(10);
  EXPECT_EQ(space_calls, 2);
}

}  // namespace
}  // namespace pricer
