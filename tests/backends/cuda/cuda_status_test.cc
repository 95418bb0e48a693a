#include "server/backends/cuda/cuda_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "common/status_macros.h"
#include "server/backends/cuda/cuda_array.h"
#include "server/backends/cuda/scoped_device.h"
#include "server/scheduler/device.h"

namespace pricer {
namespace {

using ::testing::HasSubstr;

TEST(CudaStatusTest, SuccessIsOk) {
  EXPECT_TRUE(CudaStatus(cudaSuccess, "cudaMalloc(&p, 4)", "cuda0").ok());
  EXPECT_TRUE(CublasStatus(CUBLAS_STATUS_SUCCESS, "cublasSgemm(...)", "cuda0").ok());
}

TEST(CudaStatusTest, NamesTheDeviceTheFunctionAndTheError) {
  const absl::Status s =
      CudaStatus(cudaErrorIllegalAddress, "cudaStreamSynchronize(slot.compute.get())", "cuda3");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  const std::string message(s.message());
  EXPECT_THAT(message, HasSubstr("cuda3: cudaStreamSynchronize failed: "));
  EXPECT_THAT(message, HasSubstr("cudaErrorIllegalAddress"));
  EXPECT_THAT(message, HasSubstr(cudaGetErrorString(cudaErrorIllegalAddress)));
  // The function name only, not the whole expression.
  EXPECT_THAT(message, ::testing::Not(HasSubstr("slot.compute")));
}

TEST(CudaStatusTest, CodesSayWhatACallerCanDo) {
  EXPECT_EQ(CudaStatus(cudaErrorMemoryAllocation, "cudaMalloc", "cuda0").code(),
            absl::StatusCode::kResourceExhausted);
  for (cudaError_t e : {cudaErrorNoDevice, cudaErrorInsufficientDriver, cudaErrorInvalidDevice}) {
    EXPECT_EQ(CudaStatus(e, "cudaSetDevice", "cuda0").code(), absl::StatusCode::kUnavailable)
        << cudaGetErrorName(e);
  }
  for (cudaError_t e : {cudaErrorLaunchFailure, cudaErrorInvalidValue, cudaErrorIllegalAddress}) {
    EXPECT_EQ(CudaStatus(e, "kernel", "cuda0").code(), absl::StatusCode::kInternal)
        << cudaGetErrorName(e);
  }
}

TEST(CudaStatusTest, CublasErrorsNameTheCallAndMapLikeCuda) {
  const absl::Status alloc = CublasStatus(CUBLAS_STATUS_ALLOC_FAILED, "cublasCreate(&h)", "cuda1");
  EXPECT_EQ(alloc.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(alloc.message()), HasSubstr("cuda1: cublasCreate failed: "));
  EXPECT_THAT(std::string(alloc.message()), HasSubstr("CUBLAS_STATUS_ALLOC_FAILED"));
  EXPECT_EQ(CublasStatus(CUBLAS_STATUS_NOT_INITIALIZED, "cublasCreate", "cuda0").code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(
      CublasStatusGivenRuntime(CUBLAS_STATUS_EXECUTION_FAILED, cudaSuccess, "cublasGemmEx", "cuda0")
          .code(),
      absl::StatusCode::kInternal);
}

// A kernel fault shows in cuBLAS as an execution error; the runtime's sticky
// error says the context is broken, and the device is lost.
TEST(CudaStatusTest, ACublasFailureOverABrokenContextIsDeviceLost) {
  const absl::Status fault = CublasStatusGivenRuntime(
      CUBLAS_STATUS_EXECUTION_FAILED, cudaErrorIllegalAddress, "cublasGemmEx(h, ...)", "cuda1");
  EXPECT_TRUE(IsDeviceLost(fault));
  EXPECT_EQ(fault.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(fault.message()), HasSubstr("cuda1: cublasGemmEx failed: "));
  EXPECT_THAT(std::string(fault.message()), HasSubstr("CUBLAS_STATUS_EXECUTION_FAILED"));
  EXPECT_THAT(std::string(fault.message()), HasSubstr("cudaErrorIllegalAddress"));
  // A runtime error that leaves the context usable changes nothing.
  const absl::Status plain = CublasStatusGivenRuntime(
      CUBLAS_STATUS_EXECUTION_FAILED, cudaErrorInvalidValue, "cublasGemmEx", "cuda1");
  EXPECT_FALSE(IsDeviceLost(plain));
  EXPECT_EQ(plain.code(), absl::StatusCode::kInternal);
  // Out of memory stays out of memory.
  EXPECT_FALSE(IsDeviceLost(CublasStatusGivenRuntime(
      CUBLAS_STATUS_ALLOC_FAILED, cudaErrorIllegalAddress, "cublasCreate", "cuda1")));
  // No driver at all: lost, unavailable.
  const absl::Status none = CublasStatusGivenRuntime(CUBLAS_STATUS_INTERNAL_ERROR,
                                                     cudaErrorNoDevice, "cublasCreate", "cuda1");
  EXPECT_TRUE(IsDeviceLost(none));
  EXPECT_EQ(none.code(), absl::StatusCode::kUnavailable);
}

TEST(CudaStatusTest, AMissingDeviceOrABrokenContextIsDeviceLost) {
  for (cudaError_t e : {cudaErrorNoDevice, cudaErrorInsufficientDriver, cudaErrorIllegalAddress,
                        cudaErrorLaunchFailure, cudaErrorECCUncorrectable}) {
    EXPECT_TRUE(IsDeviceLost(CudaStatus(e, "call", "cuda0"))) << cudaGetErrorName(e);
  }
  // Out of memory or a bad argument fails the call only.
  for (cudaError_t e : {cudaErrorMemoryAllocation, cudaErrorInvalidValue}) {
    EXPECT_FALSE(IsDeviceLost(CudaStatus(e, "call", "cuda0"))) << cudaGetErrorName(e);
  }
  EXPECT_TRUE(IsDeviceLost(CublasStatus(CUBLAS_STATUS_NOT_INITIALIZED, "cublasCreate", "cuda0")));
  EXPECT_FALSE(IsDeviceLost(CublasStatus(CUBLAS_STATUS_ALLOC_FAILED, "cublasCreate", "cuda0")));
}

absl::Status FailingCall(cudaError_t error) {
  RETURN_IF_ERROR(PRICER_CUDA_STATUS("cuda2", error));
  return absl::OkStatus();
}
absl::Status FailingCublasCall(cublasStatus_t status) {
  RETURN_IF_ERROR(PRICER_CUBLAS_STATUS("cuda1", status));
  return absl::OkStatus();
}

TEST(CudaStatusTest, MacroNamesTheCallAndReturnsOnlyOnFailure) {
  EXPECT_TRUE(FailingCall(cudaSuccess).ok());
  const absl::Status s = FailingCall(cudaErrorLaunchTimeout);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(s.message()), HasSubstr("cuda2: error failed: "));
  EXPECT_TRUE(FailingCublasCall(CUBLAS_STATUS_SUCCESS).ok());
  // Its code depends on the runtime's error here (no driver on a host
  // without a GPU): ACublasFailureOverABrokenContextIsDeviceLost has them.
  const absl::Status cublas = FailingCublasCall(CUBLAS_STATUS_EXECUTION_FAILED);
  EXPECT_FALSE(cublas.ok());
  EXPECT_THAT(std::string(cublas.message()), HasSubstr("cuda1: status failed: "));
}

// Without a GPU, the failure that makes the device lost; with one, the
// previous device is current again at the end of each scope.
TEST(ScopedDeviceTest, MakesTheDeviceCurrentForAScope) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    const ScopedDevice current(0, "cuda0");
    EXPECT_EQ(current.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(std::string(current.status().message()), HasSubstr("cuda0: cudaSetDevice failed"));
    EXPECT_TRUE(IsDeviceLost(current.status()));
    return;
  }
  auto current_device = [] {
    int device = -1;
    EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
    return device;
  };
  {
    const ScopedDevice outer(0, "cuda0");
    ASSERT_TRUE(outer.status().ok()) << outer.status();
    {
      const ScopedDevice last(count - 1, "last");
      ASSERT_TRUE(last.status().ok()) << last.status();
      EXPECT_EQ(current_device(), count - 1);
      {
        const ScopedDevice first(0, "cuda0");
        ASSERT_TRUE(first.status().ok()) << first.status();
        EXPECT_EQ(current_device(), 0);
      }
      EXPECT_EQ(current_device(), count - 1);
      // An ordinal past the last GPU fails and changes nothing.
      const ScopedDevice missing(count, "missing");
      EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnavailable);
      EXPECT_THAT(std::string(missing.status().message()),
                  HasSubstr("missing: cudaSetDevice failed"));
      EXPECT_EQ(current_device(), count - 1);
    }
    EXPECT_EQ(current_device(), 0);
  }
  // On a fresh thread no scope made a device current before: the last one
  // stays current rather than the runtime's default 0 being made current
  // (and given a context) again.
  std::thread([&] {
    { const ScopedDevice last(count - 1, "last"); }
    EXPECT_EQ(current_device(), count - 1);
  }).join();
}

TEST(CudaArrayTest, AFullBudgetRefusesBeforeAskingCuda) {
  MemoryAccount account(1000);
  DeviceArray<float> array;
  // 1024 bytes > 1000: refused by the account, so this holds with or without
  // a GPU, and nothing stays reserved.
  const absl::Status s =
      DeviceArray<float>::Allocate(account, 256, "result block SC", &array, {"cuda0"});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("result block SC"));
  EXPECT_EQ(account.in_use(), 0);
  EXPECT_EQ(array.data(), nullptr);
}

}  // namespace
}  // namespace pricer
