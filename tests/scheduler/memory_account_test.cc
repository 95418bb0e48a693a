#include "server/scheduler/memory_account.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

namespace pricer {
namespace {

using ::testing::HasSubstr;

TEST(MemoryAccountTest, ReserveOverBudgetIsResourceExhaustedNamingTheBytes) {
  MemoryAccount account(1000);
  ASSERT_TRUE(account.Reserve(600, "scenario block A").ok());
  const absl::Status status = account.Reserve(401, "terminal prices ST");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  const std::string message(status.message());
  EXPECT_THAT(message, HasSubstr("terminal prices ST"));
  EXPECT_THAT(message, HasSubstr("401"));
  EXPECT_THAT(message, HasSubstr("1000"));
  EXPECT_THAT(message, HasSubstr("600"));
  // A refused reservation counts nothing.
  EXPECT_EQ(account.in_use(), 600);
  EXPECT_TRUE(account.Reserve(400, "rest").ok());  // exactly the budget
  EXPECT_EQ(account.in_use(), 1000);
  EXPECT_EQ(account.budget(), 1000);
}

TEST(MemoryAccountTest, TracksThePeak) {
  MemoryAccount account(1000);
  EXPECT_EQ(account.peak(), 0);
  ASSERT_TRUE(account.Reserve(300, "a").ok());
  ASSERT_TRUE(account.Reserve(500, "b").ok());
  account.Release(500);
  ASSERT_TRUE(account.Reserve(100, "c").ok());
  EXPECT_EQ(account.in_use(), 400);
  EXPECT_EQ(account.peak(), 800);
  account.Release(400);
  EXPECT_EQ(account.in_use(), 0);
  EXPECT_EQ(account.peak(), 800);
}

TEST(MemoryAccountTest, ConcurrentReservationsNeverExceedTheBudget) {
  MemoryAccount account(20);
  std::atomic<int64_t> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < 20000; ++k) {
        if (account.Reserve(7, "x").ok()) {
          ++granted;
          account.Release(7);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_GT(granted.load(), 0);
  EXPECT_EQ(account.in_use(), 0);
  EXPECT_LE(account.peak(), 20);
  EXPECT_EQ(account.peak() % 7, 0);
}

TEST(AccountedArrayTest, CountsWhileAliveAndReleasesOnDestruction) {
  MemoryAccount account(1000);
  {
    AccountedArray<float> array;
    ASSERT_TRUE(AccountedArray<float>::Allocate(account, 25, "block", &array).ok());
    EXPECT_EQ(array.size(), 25);
    ASSERT_NE(array.data(), nullptr);
    for (int64_t k = 0; k < array.size(); ++k) array.data()[k] = static_cast<float>(k);
    EXPECT_EQ(array.data()[24], 24.0f);
    EXPECT_EQ(account.in_use(), 100);
  }
  EXPECT_EQ(account.in_use(), 0);
  EXPECT_EQ(account.peak(), 100);
}

TEST(AccountedArrayTest, FailedAllocationLeavesNothingCounted) {
  MemoryAccount account(100);
  AccountedArray<double> array;
  const absl::Status status = AccountedArray<double>::Allocate(account, 13, "SC", &array);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(status.message()), HasSubstr("104"));
  EXPECT_EQ(array.size(), 0);
  EXPECT_EQ(array.data(), nullptr);
  EXPECT_EQ(account.in_use(), 0);
}

TEST(AccountedArrayTest, MoveTransfersTheBytes) {
  MemoryAccount account(1000);
  AccountedArray<float> source;
  ASSERT_TRUE(AccountedArray<float>::Allocate(account, 50, "block", &source).ok());
  const float* data = source.data();
  {
    AccountedArray<float> moved(std::move(source));
    EXPECT_EQ(moved.data(), data);
    EXPECT_EQ(moved.size(), 50);
    EXPECT_EQ(source.size(), 0);  // a moved-from array is empty
    EXPECT_EQ(source.data(), nullptr);
    EXPECT_EQ(account.in_use(), 200);
  }
  EXPECT_EQ(account.in_use(), 0);
  // Destroying the moved-from array releases nothing more.
  { AccountedArray<float> gone = std::move(source); }
  EXPECT_EQ(account.in_use(), 0);
}

TEST(AccountedArrayTest, MoveAssignmentReleasesTheTargetsOldBytes) {
  MemoryAccount account(1000);
  AccountedArray<float> a;
  AccountedArray<float> b;
  ASSERT_TRUE(AccountedArray<float>::Allocate(account, 10, "a", &a).ok());
  ASSERT_TRUE(AccountedArray<float>::Allocate(account, 30, "b", &b).ok());
  EXPECT_EQ(account.in_use(), 160);
  b = std::move(a);
  EXPECT_EQ(account.in_use(), 40);
  EXPECT_EQ(b.size(), 10);
  b = AccountedArray<float>();
  EXPECT_EQ(account.in_use(), 0);
}

TEST(AccountedArrayTest, ReallocatingReleasesTheOldArray) {
  MemoryAccount account(1000);
  AccountedArray<float> array;
  ASSERT_TRUE(AccountedArray<float>::Allocate(account, 10, "first", &array).ok());
  ASSERT_TRUE(AccountedArray<float>::Allocate(account, 20, "second", &array).ok());
  EXPECT_EQ(array.size(), 20);
  EXPECT_EQ(account.in_use(), 80);
}

}  // namespace
}  // namespace pricer
