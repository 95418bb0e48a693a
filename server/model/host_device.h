// PRICER_HOST_DEVICE marks the model's functions that both backends run: the
// cpu build compiles and tests them as plain C++, nvcc also for the device.
#pragma once

#if defined(__CUDACC__)
#define PRICER_HOST_DEVICE __host__ __device__
#else
#define PRICER_HOST_DEVICE
#endif
