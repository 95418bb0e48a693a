#include "server/scheduler/device_queue.h"

#include <algorithm>
#include <numeric>

namespace pricer {
namespace {

constexpr size_t kMaxIntervalsPerDevice = 4096;

}  // namespace

void DeviceQueue::Remove(const std::shared_ptr<Job>& job) {
  auto it = std::find(jobs_.begin(), jobs_.end(), job);
  if (it != jobs_.end()) jobs_.erase(it);
  const std::string& client = job->spec().client;
  if (std::none_of(jobs_.begin(), jobs_.end(),
                   [&](const std::shared_ptr<Job>& j) { return j->spec().client == client; })) {
    client_served_.erase(client);
  }
}

std::vector<size_t> DeviceQueue::PickOrder(size_t device,
                                           const std::vector<const JobSchedule*>& schedules) const {
  auto client_turn = [&](const Job& job) {
    auto it = client_served_.find(job.spec().client);
    return it == client_served_.end() ? uint64_t{0} : it->second;
  };
  std::vector<size_t> order(jobs_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const Job& a = *jobs_[x];
    const Job& b = *jobs_[y];
    if (a.spec().priority != b.spec().priority) return a.spec().priority > b.spec().priority;
    const uint64_t turn_a = client_turn(a), turn_b = client_turn(b);
    if (turn_a != turn_b) return turn_a < turn_b;
    return schedules[x]->served[device] < schedules[y]->served[device];
  });
  return order;
}

void DeviceQueue::MarkServed(const Job& job, JobSchedule& schedule, size_t device) {
  client_served_[job.spec().client] = schedule.served[device] = ++turn_;
}

void DeviceQueue::TaskStarted(std::chrono::steady_clock::time_point now) {
  if (running_++ == 0) busy_since_ = now;
}

void DeviceQueue::TaskEnded(std::chrono::steady_clock::time_point now) {
  if (--running_ == 0) busy_seconds_ += std::chrono::duration<double>(now - busy_since_).count();
}

void DeviceQueue::ShardDone(ShardInterval interval, double flops) {
  ++shards_done_;
  flops_ += flops;
  intervals_.push_back(std::move(interval));
  if (intervals_.size() > kMaxIntervalsPerDevice) intervals_.pop_front();
}

double DeviceQueue::BusySeconds(std::chrono::steady_clock::time_point now) const {
  return busy_seconds_ +
         (running_ > 0 ? std::chrono::duration<double>(now - busy_since_).count() : 0.0);
}

}  // namespace pricer
