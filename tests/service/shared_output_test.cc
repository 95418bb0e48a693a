// The two sides of a shared-memory output ring against each other, in one
// process (the server opens the client's memfd through /proc/self/fd): the
// values arrive where the phase puts them, a full ring makes the writer wait
// for the reader's release and then call back, and what does not match the
// ring is refused. TSan runs it (scripts/check-sanitizers.sh): the writer's
// waiting thread, its callback and its destruction race with the reader.
#include "client/lib/shared_output.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/shared_ring.h"
#include "gtest/gtest.h"
#include "server/scheduler/shard_planner.h"
#include "server/service/shared_output.h"

namespace pricer {
namespace {

// `columns` columns of `rows` rows from `first`, each value distinct.
SharedFloats Chunk(int64_t rows, int64_t first, int64_t columns) {
  std::vector<float> values(static_cast<size_t>(rows * columns));
  std::iota(values.begin(), values.end(), static_cast<float>(first * rows));
  return SharedFloats(std::move(values));
}

std::vector<float> Floats(const ValueBytes& bytes) {
  std::vector<float> out(static_cast<size_t>(bytes.size()) / sizeof(float));
  bytes.CopyTo(reinterpret_cast<char*>(out.data()));
  return out;
}

std::vector<float> Floats(const SharedFloats& floats) { return {floats.begin(), floats.end()}; }

TEST(SharedOutputRing, AFullRingWaitsForTheReadersReleaseAndTheValuesArrive) {
  constexpr int64_t kRows = 1001;
  auto reader = SharedOutputReader::Create(2, /*phase=*/100);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto writer = SharedOutputWriter::Open((*reader)->ring());
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::vector<SharedFloats> chunks = {Chunk(kRows, 0, 7), Chunk(kRows, 7, 5),
                                            Chunk(kRows, 12, 3)};
  auto never = [] { ADD_FAILURE() << "a free slot called back"; };
  EXPECT_EQ(*(*writer)->TryWrite(chunks[0], kRows, 0, never), 1);
  EXPECT_EQ(*(*writer)->TryWrite(chunks[1], kRows, 7, never), 2);
  absl::Notification freed;
  EXPECT_EQ(*(*writer)->TryWrite(chunks[2], kRows, 12, [&] { freed.Notify(); }), 0);
  EXPECT_FALSE(freed.WaitForNotificationWithTimeout(absl::Milliseconds(50)));

  auto first = (*reader)->Take(1, kRows, 0, 7);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(Floats(*first), Floats(chunks[0]));
  // The slot is free once released, from another thread, as a client would.
  std::thread([&] { (*reader)->Release(); }).join();
  ASSERT_TRUE(freed.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(*(*writer)->TryWrite(chunks[2], kRows, 12, never), 1);
  for (auto [slot, column, columns, chunk] : {std::tuple{2, 7, 5, 1}, std::tuple{1, 12, 3, 2}}) {
    auto values = (*reader)->Take(slot, kRows, column, columns);
    ASSERT_TRUE(values.ok()) << values.status();
    EXPECT_EQ(Floats(*values), Floats(chunks[static_cast<size_t>(chunk)])) << column;
    (*reader)->Release();
  }
}

TEST(SharedOutputRing, AWriterDestroyedWhileItWaitsDropsItsCallback) {
  auto reader = SharedOutputReader::Create(1);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto writer = SharedOutputWriter::Open((*reader)->ring());
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ(*(*writer)->TryWrite(Chunk(10, 0, 1), 10, 0, [] {}), 1);
  bool called = false;
  EXPECT_EQ(*(*writer)->TryWrite(Chunk(10, 1, 1), 10, 1, [&] { called = true; }), 0);
  writer->reset();  // stops the waiting thread
  (*reader)->Release();
  EXPECT_FALSE(called);
}

// The layout (SharedRingLayout) against the server's chunks: the largest
// chunk, at the phase that puts it furthest into its slot, fits the smallest
// slot, the one both clients use.
TEST(SharedOutputRing, TheSmallestSlotHoldsTheLargestChunkAtTheLastPhase) {
  const int32_t last_phase = shared_ring::Layout().slot_alignment() - 1;
  const int64_t columns = kMaxChunkPayloadBytes / 4;  // one row
  auto reader = SharedOutputReader::Create(1, last_phase);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ((*reader)->ring().slot_bytes(), shared_ring::Layout().min_slot_bytes());
  auto writer = SharedOutputWriter::Open((*reader)->ring());
  ASSERT_TRUE(writer.ok()) << writer.status();
  const SharedFloats chunk = Chunk(1, 0, columns);
  const absl::StatusOr<int32_t> slot = (*writer)->TryWrite(chunk, 1, 0, [] {});
  ASSERT_TRUE(slot.ok()) << slot.status();
  EXPECT_EQ(*slot, 1);
  auto values = (*reader)->Take(1, 1, 0, columns);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Floats(*values), Floats(chunk));
}

TEST(SharedOutputRing, TheReaderRefusesASlotOutOfTurnOrAChunkThatDoesNotFit) {
  auto reader = SharedOutputReader::Create(2);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->Take(2, 10, 0, 1).status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ((*reader)->Take(1, 1 << 20, 0, 2).status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ((*reader)->Take(1, -1, 0, 2).status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE((*reader)->Take(1, 10, 0, 1).ok());
  EXPECT_FALSE(SharedOutputReader::Create(0).ok());
  EXPECT_FALSE(SharedOutputReader::Create(1, 4096).ok());
}

TEST(SharedOutputRing, TheWriterRefusesARingThatIsNotTheOneDescribed) {
  auto reader = SharedOutputReader::Create(1);
  ASSERT_TRUE(reader.ok()) << reader.status();
  v1::SharedMemoryRing ring = (*reader)->ring();
  ring.set_token(std::string(16, 'x'));
  absl::Status refused = SharedOutputWriter::Open(ring).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("output.shared_memory.token"), std::string::npos) << refused;
  ring = (*reader)->ring();
  ring.set_slots(2);  // more than the file holds
  refused = SharedOutputWriter::Open(ring).status();
  EXPECT_NE(refused.message().find("fewer than the"), std::string::npos) << refused;
  v1::OutputOptions output;
  *output.mutable_shared_memory() = (*reader)->ring();
  EXPECT_EQ(OpenRequestedRing(output, true).status().code(), absl::StatusCode::kInvalidArgument);
  output.set_full(true);
  EXPECT_EQ(OpenRequestedRing(output, false).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(OpenRequestedRing(output, true).ok());
}

}  // namespace
}  // namespace pricer
