#include "server/service/idle_watch.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/time/time.h"

namespace pricer {

void IdleWatch::Ticket::Close() {
  absl::MutexLock lock(&mu_);
  time_out_ = nullptr;
}

bool IdleWatch::Ticket::TimeOutIfIdle(Clock::duration limit, Clock::time_point now) {
  absl::MutexLock lock(&mu_);
  if (!time_out_) return true;
  const Clock::rep last_count = last_.load(std::memory_order_relaxed);
  if (last_count == kPaused) return false;
  const Clock::time_point last{Clock::duration(last_count)};
  if (now - last <= limit) return false;
  std::function<void()> time_out = std::move(time_out_);
  time_out_ = nullptr;
  time_out();  // under mu_: Close waits for it, so the call is still there
  return true;
}

IdleWatch::IdleWatch(Clock::duration limit) : limit_(limit) {
  if (limit_ > Clock::duration::zero()) thread_ = std::thread([this] { Loop(); });
}

IdleWatch::~IdleWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<IdleWatch::Ticket> IdleWatch::Watch(std::function<void()> time_out) {
  auto ticket = std::make_shared<Ticket>(std::move(time_out));
  if (limit_ <= Clock::duration::zero()) return ticket;
  absl::MutexLock lock(&mu_);
  tickets_.push_back(ticket);
  return ticket;
}

void IdleWatch::Loop() {
  const absl::Duration period = std::min(absl::FromChrono(limit_) / 4, absl::Seconds(1));
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), period)) {
    // The tickets are looked at without mu_ (a time-out may finish its call,
    // which may start another); those watched meanwhile join the ones kept.
    std::vector<std::shared_ptr<Ticket>> tickets = std::exchange(tickets_, {});
    mu_.Unlock();
    const Clock::time_point now = Clock::now();
    std::erase_if(tickets, [&](const std::shared_ptr<Ticket>& ticket) {
      return ticket->TimeOutIfIdle(limit_, now);
    });
    mu_.Lock();
    tickets_.insert(tickets_.end(), std::make_move_iterator(tickets.begin()),
                    std::make_move_iterator(tickets.end()));
  }
}

}  // namespace pricer
