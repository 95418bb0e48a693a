// The rounds of a request with a precision target (precision_target.h): round
// r is an engine job at P 2^r paths over the column range spanning the
// columns still short of the target, submitted once round r - 1 has ended,
// so each round is planned and budgeted like any job, and a cancel or a
// deadline stops it at a shard boundary. A thread per call reads each
// round's stream, sends the columns that are final (met, or in the last
// round) as chunks whose rows are their paths, and keeps the others for the
// next round; the columns between them that a round computes again are
// dropped. Each column is sent once; chunks come in rounds, each round
// announced by a RoundStarted reply.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/scheduler/engine.h"
#include "server/service/price_run.h"

namespace pricer {

class TargetedRun final : public PriceRun {
 public:
  // The chunk bytes the call holds unsent (statistics only: small).
  static constexpr int64_t kMaxPendingBytes = 64LL << 20;

  // Checks that the last round fits the devices, submits round 0 of `spec`
  // (whose target is set) and starts the thread that runs the rounds.
  static absl::StatusOr<std::shared_ptr<TargetedRun>> Start(Engine& engine, JobSpec spec);
  // Cancels what still runs and joins the thread.
  ~TargetedRun() override;

  const Job& job() const override { return *first_; }
  ResultStream& results() override { return results_; }
  void Cancel(absl::Status why) override;
  JobSummary Summary() const override;

 private:
  TargetedRun(Engine& engine, std::shared_ptr<Job> first, std::vector<int64_t> round_paths);

  // The thread: every round, then the stream's close.
  void Run();
  // Reads round `round`'s job to its end; its status.
  absl::Status ReadRound(Job& job, int64_t round);
  // Sends the final columns of a chunk of round `round` and keeps the others open.
  bool SendFinal(const ResultChunk& chunk, int64_t round);
  // Queues `chunk` once the reader has room; false once cancelled.
  bool Send(ResultChunk chunk);
  // Submits round `round` over the open columns' span; waits while the
  // engine's queue or the client's quota is full.
  absl::StatusOr<std::shared_ptr<Job>> SubmitRound(int64_t round);
  // Waits for a chunk, room for one, or a cancel (up to `timeout`); false
  // once cancelled.
  bool Wait(absl::Duration timeout = absl::InfiniteDuration());
  void Wake();

  Engine& engine_;
  const std::shared_ptr<Job> first_;
  const std::vector<int64_t> round_paths_;  // P 2^r <= max_paths
  const std::chrono::steady_clock::time_point start_;
  ResultStream results_;
  // Per requested column: 1 while short of the target (the thread's own).
  std::vector<uint8_t> open_;
  int64_t open_count_ = 0;
  std::atomic<int64_t> bytes_{0};
  std::atomic<double> elapsed_seconds_{-1};
  mutable absl::Mutex mu_;
  absl::CondVar wake_;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<Job> current_ ABSL_GUARDED_BY(mu_);
  JobSummary ended_ ABSL_GUARDED_BY(mu_);  // work of the rounds that ended
  std::thread thread_;
};

}  // namespace pricer
