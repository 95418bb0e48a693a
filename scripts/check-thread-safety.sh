#!/usr/bin/env bash
# Builds the server and client libraries and executables with clang and
# -Wthread-safety -Werror (CMakeLists.txt adds it for clang), so that every
# lock annotation (ABSL_GUARDED_BY, ABSL_EXCLUSIVE_LOCKS_REQUIRED) is checked:
# shared state touched without its mutex fails the build. Into
# ${TSA_BUILD_DIR:-build-thread-safety}; tests and benchmarks are left out
# (the main build compiles them). The analysis is clang's front end, so the
# build is -O0 without debug information: the same check at a fraction of an
# optimizing build's time. The CUDA backend's host sources are annotated
# (cuda_job.cc) and stay in; nvcc compiles kernels.cu with g++ as host
# compiler, also at -O0.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TSA_BUILD_DIR:-build-thread-safety}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_CUDA_FLAGS_DEBUG=-O0 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_CUDA_HOST_COMPILER=g++ \
  -DPRICER_BUILD_TESTS=OFF -DPRICER_BUILD_BENCHMARKS=OFF > /dev/null
cmake --build "$build_dir" -j "$(nproc)"
echo "thread-safety analysis: clean"
