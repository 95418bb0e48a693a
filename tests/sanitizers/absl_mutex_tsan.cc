// ThreadSanitizer annotations for absl::Mutex and absl::CondVar, linked into
// the build-tsan test binaries only (scripts/check-sanitizers.sh).
//
// Debian's Abseil is not built with -fsanitize=thread, so its Mutex carries
// no __tsan_mutex_* annotations: TSan would not see the happens-before that a
// lock gives. This file defines the locking members of absl::Mutex and
// absl::CondVar itself. The script links it into each binary as an object and
// exports these symbols, so they interpose on Abseil's: our code's calls come
// here, and so do those of the uninstrumented libraries the binary loads
// (gRPC's gpr_mu and grpc_core::Mutex are absl::Mutex, and so its queues and
// thread pools hand work between threads under locks TSan now sees). Each
// reports the lock or unlock to TSan and goes on to Abseil's definition, found
// by its mangled name with dlsym(RTLD_NEXT); the script checks that the library
// defines every symbol this file does.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <type_traits>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

using absl::Condition;
using absl::CondVar;
using absl::Duration;
using absl::Mutex;
using absl::Time;

#define PRICER_STRING(x) PRICER_STRING_OF(x)
#define PRICER_STRING_OF(x) #x

namespace {

constexpr std::string_view kAbslNamespace = PRICER_STRING(ABSL_OPTION_INLINE_NAMESPACE_NAME);

// Abseil's definition of `symbol` (its mangled name after "absl::<inline
// namespace>::"), as a function that takes `this` first.
template <typename Fn>
Fn Real(const char* symbol) {
  char name[160];
  std::snprintf(name, sizeof name, "_ZN4absl%zu%s%s", kAbslNamespace.size(), kAbslNamespace.data(),
                symbol);
  void* fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    std::fprintf(stderr, "absl_mutex_tsan: no %s in the libraries after this binary\n", name);
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

#define PRICER_REAL(symbol, ...) static const auto real = Real<__VA_ARGS__>(symbol)

// Abseil's definitions call one another (CondVar::WaitWithTimeout calls
// WaitWithDeadline, through the interposed symbol): only the outermost call
// is reported to TSan.
thread_local int depth = 0;

// Runs Abseil's definition, `real`, between `before` and `after`.
template <typename Before, typename Real, typename After>
auto Annotated(Before before, Real real, After after) {
  if (depth > 0) return real();
  before();
  ++depth;
  if constexpr (std::is_void_v<std::invoke_result_t<Real>>) {
    real();
    --depth;
    after();
  } else {
    auto result = real();
    --depth;
    after(result);
    return result;
  }
}

// A blocking acquisition: held on return, whatever the result.
template <typename Real>
auto Acquiring(Mutex* mu, unsigned flags, Real real) {
  return Annotated([=] { __tsan_mutex_pre_lock(mu, flags); }, real,
                   [=](auto...) { __tsan_mutex_post_lock(mu, flags, 0); });
}

// TryLock and ReaderTryLock: held when `real` says so.
template <typename Real>
bool Trying(Mutex* mu, unsigned flags, Real real) {
  flags |= __tsan_mutex_try_lock;
  return Annotated([=] { __tsan_mutex_pre_lock(mu, flags); }, real,
                   [=](bool locked) {
                     __tsan_mutex_post_lock(mu, flags | (locked ? 0 : __tsan_mutex_try_lock_failed),
                                            0);
                   });
}

template <typename Real>
void Releasing(Mutex* mu, unsigned flags, Real real) {
  Annotated([=] { __tsan_mutex_pre_unlock(mu, flags); }, real,
            [=] { __tsan_mutex_post_unlock(mu, flags); });
}

// Await and CondVar::Wait release the lock and take it again before they
// return: a release for TSan, then the calls (whose condition checks read
// guarded state without TSan knowing the lock is held) ignored as a lock
// acquisition is, then the acquire.
template <typename Real>
auto Reacquiring(Mutex* mu, Real real) {
  return Annotated(
      [=] {
        __tsan_mutex_pre_unlock(mu, 0);
        __tsan_mutex_post_unlock(mu, 0);
        __tsan_mutex_pre_lock(mu, 0);
      },
      real, [=](auto...) { __tsan_mutex_post_lock(mu, 0, 0); });
}

using Plain = void (*)(Mutex*);
using Try = bool (*)(Mutex*);
using When = void (*)(Mutex*, const Condition&);
using WhenFor = bool (*)(Mutex*, const Condition&, Duration);
using WhenUntil = bool (*)(Mutex*, const Condition&, Time);
constexpr unsigned kRead = __tsan_mutex_read_lock;

}  // namespace

void Mutex::Lock() {
  PRICER_REAL("5Mutex4LockEv", Plain);
  Acquiring(this, 0, [&] { real(this); });
}
void Mutex::Unlock() {
  PRICER_REAL("5Mutex6UnlockEv", Plain);
  Releasing(this, 0, [&] { real(this); });
}
bool Mutex::TryLock() {
  PRICER_REAL("5Mutex7TryLockEv", Try);
  return Trying(this, 0, [&] { return real(this); });
}
void Mutex::ReaderLock() {
  PRICER_REAL("5Mutex10ReaderLockEv", Plain);
  Acquiring(this, kRead, [&] { real(this); });
}
void Mutex::ReaderUnlock() {
  PRICER_REAL("5Mutex12ReaderUnlockEv", Plain);
  Releasing(this, kRead, [&] { real(this); });
}
bool Mutex::ReaderTryLock() {
  PRICER_REAL("5Mutex13ReaderTryLockEv", Try);
  return Trying(this, kRead, [&] { return real(this); });
}
void Mutex::LockWhen(const Condition& cond) {
  PRICER_REAL("5Mutex8LockWhenERKNS0_9ConditionE", When);
  Acquiring(this, 0, [&] { real(this, cond); });
}
void Mutex::ReaderLockWhen(const Condition& cond) {
  PRICER_REAL("5Mutex14ReaderLockWhenERKNS0_9ConditionE", When);
  Acquiring(this, kRead, [&] { real(this, cond); });
}
bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  PRICER_REAL("5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE", WhenFor);
  return Acquiring(this, 0, [&] { return real(this, cond, timeout); });
}
bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  PRICER_REAL("5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE", WhenFor);
  return Acquiring(this, kRead, [&] { return real(this, cond, timeout); });
}
bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  PRICER_REAL("5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE", WhenUntil);
  return Acquiring(this, 0, [&] { return real(this, cond, deadline); });
}
bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  PRICER_REAL("5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE", WhenUntil);
  return Acquiring(this, kRead, [&] { return real(this, cond, deadline); });
}
void Mutex::Await(const Condition& cond) {
  PRICER_REAL("5Mutex5AwaitERKNS0_9ConditionE", When);
  Reacquiring(this, [&] { real(this, cond); });
}
bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  PRICER_REAL("5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE", WhenFor);
  return Reacquiring(this, [&] { return real(this, cond, timeout); });
}
bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  PRICER_REAL("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE", WhenUntil);
  return Reacquiring(this, [&] { return real(this, cond, deadline); });
}
void CondVar::Wait(Mutex* mu) {
  PRICER_REAL("7CondVar4WaitEPNS0_5MutexE", void (*)(CondVar*, Mutex*));
  Reacquiring(mu, [&] { real(this, mu); });
}
bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  PRICER_REAL("7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE",
              bool (*)(CondVar*, Mutex*, Duration));
  return Reacquiring(mu, [&] { return real(this, mu, timeout); });
}
bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  PRICER_REAL("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE",
              bool (*)(CondVar*, Mutex*, Time));
  return Reacquiring(mu, [&] { return real(this, mu, deadline); });
}
