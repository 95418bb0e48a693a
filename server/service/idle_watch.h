// Ends calls that stay idle too long: each watched call touches its ticket
// whenever something arrives; one thread looks every quarter of the limit
// (at most every second) and calls the time-out of each ticket idle for
// longer than the limit, once. The service watches uploads with it
// (--upload-idle-seconds): a client that starts an upload and stops sending
// would otherwise hold its reservation and its bytes until its call ends;
// and Price calls whose reader takes no reply (--stalled-reader-seconds),
// which would hold their job's buffers.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace pricer {

class IdleWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // One watched call.
  class Ticket {
   public:
    explicit Ticket(std::function<void()> time_out) : time_out_(std::move(time_out)) { Touch(); }
    // Something arrived: the idle time starts again.
    void Touch() { last_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed); }
    // Nothing is awaited until the next Touch: the call cannot be idle.
    void Pause() { last_.store(kPaused, std::memory_order_relaxed); }
    // No time-out from now on; waits for one that is running. After Close
    // the call may go (the time-out no longer touches it).
    void Close() ABSL_LOCKS_EXCLUDED(mu_);

   private:
    friend class IdleWatch;
    // Calls the time-out when idle for longer than `limit`; whether the
    // ticket is done (closed or timed out).
    bool TimeOutIfIdle(Clock::duration limit, Clock::time_point now) ABSL_LOCKS_EXCLUDED(mu_);

    static constexpr Clock::rep kPaused = std::numeric_limits<Clock::rep>::max();
    std::atomic<Clock::rep> last_;  // Clock's count at the last Touch, or kPaused
    absl::Mutex mu_;
    std::function<void()> time_out_ ABSL_GUARDED_BY(mu_);  // empty once closed or called
  };

  // `limit` <= 0: nothing ever times out (and no thread runs).
  explicit IdleWatch(Clock::duration limit);
  ~IdleWatch();
  IdleWatch(const IdleWatch&) = delete;
  IdleWatch& operator=(const IdleWatch&) = delete;

  // Watches a call: `time_out` runs on the watch's thread if the ticket is
  // not touched for `limit`, unless the ticket was closed first.
  std::shared_ptr<Ticket> Watch(std::function<void()> time_out) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const Clock::duration limit_;
  absl::Mutex mu_;
  std::vector<std::shared_ptr<Ticket>> tickets_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // Loop, when limit_ > 0
};

}  // namespace pricer
