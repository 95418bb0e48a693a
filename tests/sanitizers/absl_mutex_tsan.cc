// ThreadSanitizer annotations for absl::Mutex and absl::CondVar, linked into
// the build-tsan test binaries only (scripts/check-sanitizers.sh).
//
// Debian's Abseil is not built with -fsanitize=thread, so its Mutex carries
// no __tsan_mutex_* annotations: TSan would not see the happens-before that a
// lock gives, and every access to state guarded by an absl::Mutex would be
// reported as a race. The script links with -Wl,--wrap=<symbol> for each
// function below, so our code's calls come here, report the lock and unlock to
// TSan, and go on to Abseil's definition (__real_<symbol>). The symbols are
// those of Debian 12's libabsl (inline namespace "debian3"); the script checks
// that the library has them.
#include <sanitizer/tsan_interface.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

using absl::Condition;
using absl::CondVar;
using absl::Duration;
using absl::Mutex;
using absl::Time;

namespace {
void Locking(Mutex* mu, unsigned flags) { __tsan_mutex_pre_lock(mu, flags); }
void Locked(Mutex* mu, unsigned flags) { __tsan_mutex_post_lock(mu, flags, 0); }
void Unlocked(Mutex* mu, unsigned flags) {
  __tsan_mutex_pre_unlock(mu, flags);
  __tsan_mutex_post_unlock(mu, flags);
}
// Await and CondVar::Wait release the lock and take it again before they
// return: a release for TSan, then the calls (whose condition checks read
// guarded state without TSan knowing the lock is held) ignored as a lock
// acquisition is, then the acquire.
template <typename Call>
auto Reacquiring(Mutex* mu, Call call) {
  Unlocked(mu, 0);
  Locking(mu, 0);
  auto result = call();
  Locked(mu, 0);
  return result;
}
}  // namespace

#define PRICER_ABSL(name) _ZN4absl7debian3##name
#define PRICER_WRAP(name) __wrap__ZN4absl7debian3##name
#define PRICER_REAL(name) __real__ZN4absl7debian3##name

extern "C" {
void PRICER_REAL(5Mutex4LockEv)(Mutex*);
void PRICER_REAL(5Mutex6UnlockEv)(Mutex*);
bool PRICER_REAL(5Mutex7TryLockEv)(Mutex*);
void PRICER_REAL(5Mutex10ReaderLockEv)(Mutex*);
void PRICER_REAL(5Mutex12ReaderUnlockEv)(Mutex*);
bool PRICER_REAL(5Mutex13ReaderTryLockEv)(Mutex*);
void PRICER_REAL(5Mutex8LockWhenERKNS0_9ConditionE)(Mutex*, const Condition&);
void PRICER_REAL(5Mutex14ReaderLockWhenERKNS0_9ConditionE)(Mutex*, const Condition&);
bool PRICER_REAL(5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE)(
    Mutex*, const Condition&, Duration);
bool PRICER_REAL(5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE)(
    Mutex*, const Condition&, Time);
void PRICER_REAL(5Mutex5AwaitERKNS0_9ConditionE)(Mutex*, const Condition&);
bool PRICER_REAL(5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE)(
    Mutex*, const Condition&, Duration);
bool PRICER_REAL(5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE)(
    Mutex*, const Condition&, Time);
void PRICER_REAL(7CondVar4WaitEPNS0_5MutexE)(CondVar*, Mutex*);
bool PRICER_REAL(7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE)(CondVar*, Mutex*, Duration);
bool PRICER_REAL(7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE)(CondVar*, Mutex*, Time);

void PRICER_WRAP(5Mutex4LockEv)(Mutex* mu) {
  Locking(mu, 0);
  PRICER_REAL(5Mutex4LockEv)(mu);
  Locked(mu, 0);
}
void PRICER_WRAP(5Mutex6UnlockEv)(Mutex* mu) {
  __tsan_mutex_pre_unlock(mu, 0);
  PRICER_REAL(5Mutex6UnlockEv)(mu);
  __tsan_mutex_post_unlock(mu, 0);
}
bool PRICER_WRAP(5Mutex7TryLockEv)(Mutex* mu) {
  Locking(mu, __tsan_mutex_try_lock);
  bool locked = PRICER_REAL(5Mutex7TryLockEv)(mu);
  Locked(mu, __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed));
  return locked;
}
void PRICER_WRAP(5Mutex10ReaderLockEv)(Mutex* mu) {
  Locking(mu, __tsan_mutex_read_lock);
  PRICER_REAL(5Mutex10ReaderLockEv)(mu);
  Locked(mu, __tsan_mutex_read_lock);
}
void PRICER_WRAP(5Mutex12ReaderUnlockEv)(Mutex* mu) {
  __tsan_mutex_pre_unlock(mu, __tsan_mutex_read_lock);
  PRICER_REAL(5Mutex12ReaderUnlockEv)(mu);
  __tsan_mutex_post_unlock(mu, __tsan_mutex_read_lock);
}
bool PRICER_WRAP(5Mutex13ReaderTryLockEv)(Mutex* mu) {
  unsigned flags = __tsan_mutex_read_lock | __tsan_mutex_try_lock;
  Locking(mu, flags);
  bool locked = PRICER_REAL(5Mutex13ReaderTryLockEv)(mu);
  Locked(mu, flags | (locked ? 0 : __tsan_mutex_try_lock_failed));
  return locked;
}
void PRICER_WRAP(5Mutex8LockWhenERKNS0_9ConditionE)(Mutex* mu, const Condition& cond) {
  Locking(mu, 0);
  PRICER_REAL(5Mutex8LockWhenERKNS0_9ConditionE)(mu, cond);
  Locked(mu, 0);
}
void PRICER_WRAP(5Mutex14ReaderLockWhenERKNS0_9ConditionE)(Mutex* mu, const Condition& cond) {
  Locking(mu, __tsan_mutex_read_lock);
  PRICER_REAL(5Mutex14ReaderLockWhenERKNS0_9ConditionE)(mu, cond);
  Locked(mu, __tsan_mutex_read_lock);
}
bool PRICER_WRAP(5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE)(
    Mutex* mu, const Condition& cond, Duration timeout) {
  Locking(mu, 0);  // held on return whatever the result
  bool met = PRICER_REAL(5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE)(mu, cond, timeout);
  Locked(mu, 0);
  return met;
}
bool PRICER_WRAP(5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE)(
    Mutex* mu, const Condition& cond, Time deadline) {
  Locking(mu, 0);
  bool met = PRICER_REAL(5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE)(mu, cond, deadline);
  Locked(mu, 0);
  return met;
}
void PRICER_WRAP(5Mutex5AwaitERKNS0_9ConditionE)(Mutex* mu, const Condition& cond) {
  Reacquiring(mu, [&] {
    PRICER_REAL(5Mutex5AwaitERKNS0_9ConditionE)(mu, cond);
    return 0;
  });
}
bool PRICER_WRAP(5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE)(
    Mutex* mu, const Condition& cond, Duration timeout) {
  return Reacquiring(mu, [&] {
    return PRICER_REAL(5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE)(mu, cond, timeout);
  });
}
bool PRICER_WRAP(5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE)(
    Mutex* mu, const Condition& cond, Time deadline) {
  return Reacquiring(mu, [&] {
    return PRICER_REAL(5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE)(mu, cond, deadline);
  });
}
void PRICER_WRAP(7CondVar4WaitEPNS0_5MutexE)(CondVar* cv, Mutex* mu) {
  Reacquiring(mu, [&] {
    PRICER_REAL(7CondVar4WaitEPNS0_5MutexE)(cv, mu);
    return 0;
  });
}
bool PRICER_WRAP(7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE)(
    CondVar* cv, Mutex* mu, Duration timeout) {
  return Reacquiring(mu, [&] {
    return PRICER_REAL(7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE)(cv, mu, timeout);
  });
}
bool PRICER_WRAP(7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE)(
    CondVar* cv, Mutex* mu, Time deadline) {
  return Reacquiring(mu, [&] {
    return PRICER_REAL(7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE)(cv, mu, deadline);
  });
}
}  // extern "C"
