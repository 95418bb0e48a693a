// A floor under the thread stacks that libraries ask for, linked into pricerd.
//
// civetweb (the HTTP server under prometheus-cpp's Exposer) creates its
// threads with 100 KiB stacks. glibc refuses a stack smaller than the static
// TLS of the loaded libraries (EINVAL), and a CUDA build loads cuBLAS (about
// 96 KiB of TLS) beside OpenBLAS (about 60 KiB): the /metrics endpoint could
// not start. This definition takes the place of glibc's for the process and
// raises a request below 1 MiB to 1 MiB; larger ones pass unchanged.
#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <cstddef>

namespace {
constexpr size_t kMinStackBytes = size_t{1} << 20;
}  // namespace

extern "C" int pthread_attr_setstacksize(pthread_attr_t* attr, size_t size) noexcept {
  using Function = int (*)(pthread_attr_t*, size_t);
  static const auto glibc =
      reinterpret_cast<Function>(dlsym(RTLD_NEXT, "pthread_attr_setstacksize"));
  return glibc(attr, std::max(size, kMinStackBytes));
}
