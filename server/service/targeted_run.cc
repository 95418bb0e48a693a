#include "server/service/targeted_run.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace pricer {
namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// How long a round waits before it asks a full queue again.
constexpr absl::Duration kQueueRetry = absl::Milliseconds(200);

// Adds the device work of `round` to `to`.
void AddWork(const JobSummary& round, JobSummary* to) {
  to->flops += round.flops;
  to->gemm_seconds += round.gemm_seconds;
  to->statistics_seconds += round.statistics_seconds;
}

}  // namespace

absl::StatusOr<std::shared_ptr<TargetedRun>> TargetedRun::Start(Engine& engine, JobSpec spec) {
  std::vector<int64_t> round_paths = spec.target.RoundPaths(spec.paths);
  {
    JobSpec last = spec;
    last.paths = round_paths.back();
    last.prepare = nullptr;
    const absl::Status fits = engine.CheckFits(last);
    if (!fits.ok()) {
      return absl::Status(fits.code(),
                          absl::StrCat("the last round of target.max_paths (", round_paths.back(),
                                       " paths) does not fit: ", fits.message()));
    }
  }
  ASSIGN_OR_RETURN(std::shared_ptr<Job> first, engine.Submit(std::move(spec)));
  std::shared_ptr<TargetedRun> run(
      new TargetedRun(engine, std::move(first), std::move(round_paths)));
  run->thread_ = std::thread([r = run.get()] { r->Run(); });
  return run;
}

TargetedRun::TargetedRun(Engine& engine, std::shared_ptr<Job> first,
                         std::vector<int64_t> round_paths)
    : engine_(engine),
      first_(std::move(first)),
      round_paths_(std::move(round_paths)),
      start_(std::chrono::steady_clock::now()),
      results_(kMaxPendingBytes, [this] { Wake(); }),
      open_(static_cast<size_t>(first_->spec().column_end - first_->spec().column_begin), 1),
      open_count_(static_cast<int64_t>(open_.size())),
      current_(first_) {}

TargetedRun::~TargetedRun() {
  Cancel(absl::CancelledError("the call ended"));
  // The reactor may end the call from the thread's last close of the stream.
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void TargetedRun::Cancel(absl::Status why) {
  std::shared_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    job = current_;
  }
  wake_.SignalAll();
  if (job != nullptr) job->Cancel(why);
  results_.Close(std::move(why));
}

JobSummary TargetedRun::Summary() const {
  JobSummary summary;
  std::shared_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    summary = ended_;
    job = current_;
  }
  if (job != nullptr) AddWork(job->Summary(), &summary);
  const JobSummary first = first_->Summary();
  summary.started = first.started;
  summary.queued_seconds = first.queued_seconds;
  const double elapsed = elapsed_seconds_.load();
  summary.elapsed_seconds =
      elapsed >= 0 ? elapsed : Seconds(std::chrono::steady_clock::now() - start_);
  summary.bytes = bytes_.load();
  return summary;
}

void TargetedRun::Wake() {
  {
    absl::MutexLock lock(&mu_);
    woken_ = true;
  }
  wake_.SignalAll();
}

bool TargetedRun::Wait(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  const absl::Time until = absl::Now() + timeout;
  while (!woken_ && !cancelled_) {
    if (wake_.WaitWithDeadline(&mu_, until)) break;
  }
  woken_ = false;
  return !cancelled_;
}

void TargetedRun::Run() {
  std::shared_ptr<Job> job = first_;
  absl::Status status;
  for (int64_t round = 0;; ++round) {
    status = ReadRound(*job, round);
    {
      absl::MutexLock lock(&mu_);
      AddWork(job->Summary(), &ended_);
      current_ = nullptr;
    }
    if (!status.ok() || open_count_ == 0) break;
    absl::StatusOr<std::shared_ptr<Job>> next = SubmitRound(round + 1);
    if (!next.ok()) {
      status = next.status();
      break;
    }
    job = *std::move(next);
  }
  elapsed_seconds_ = Seconds(std::chrono::steady_clock::now() - start_);
  results_.Close(status);  // ignored once cancelled
}

absl::Status TargetedRun::ReadRound(Job& job, int64_t round) {
  ResultStream& stream = job.results();
  stream.SetListener([this] { Wake(); });
  bool announced = false;
  absl::Status status;
  for (;;) {
    if (!announced && stream.ready()) {
      // `accepted` (after round 0's preparation), then the round.
      results_.MarkReady();
      ResultChunk started;
      started.kind = ResultChunk::Kind::kRoundStarted;
      started.round = round;
      started.rows = job.spec().paths;
      started.begin = job.spec().column_begin;
      started.end = job.spec().column_end;
      started.round_columns = open_count_;
      announced = Send(std::move(started));
    }
    if (std::optional<ResultChunk> chunk = stream.Pop(); chunk.has_value()) {
      const bool sent = SendFinal(*chunk, round);
      stream.Release(chunk->payload_bytes());
      if (sent) continue;
    } else if (stream.Drained(&status)) {
      break;
    } else if (Wait()) {
      continue;
    }
    status = absl::CancelledError("the call was cancelled");
    job.Cancel(status);
    break;
  }
  stream.DetachListener();
  return status;
}

bool TargetedRun::SendFinal(const ResultChunk& chunk, int64_t round) {
  const PrecisionTarget& target = first_->spec().target;
  const bool last = round + 1 == static_cast<int64_t>(round_paths_.size());
  const int64_t first_column = first_->spec().column_begin;
  // The final columns go out in runs of adjacent columns, a chunk each.
  ResultChunk run;
  auto flush = [&] {
    if (run.end == run.begin) return true;
    run.rows = chunk.rows;
    run.statistics.AppendRange(chunk.statistics, run.begin - chunk.begin, run.end - run.begin);
    if (!chunk.contributions.empty()) {
      run.contributions = chunk.contributions.Range(run.begin - chunk.begin, run.end - run.begin);
    }
    const bool sent = Send(std::move(run));
    run = ResultChunk();
    return sent;
  };
  for (int64_t c = chunk.begin; c < chunk.end; ++c) {
    uint8_t& open = open_[static_cast<size_t>(c - first_column)];
    const bool met = open && target.Met(chunk.statistics, c - chunk.begin);
    if (!met && !(open && last)) {  // sent before, or priced again next round
      if (!flush()) return false;
      continue;
    }
    open = 0;
    --open_count_;
    if (run.end == run.begin) run.begin = run.end = c;
    ++run.end;
    run.statistics.target_met.push_back(met ? 1 : 0);
  }
  return flush();
}

bool TargetedRun::Send(ResultChunk chunk) {
  const int64_t bytes = chunk.payload_bytes();
  while (!results_.TryReserve(bytes)) {
    if (!Wait()) return false;
  }
  bytes_ += bytes;
  results_.Push(std::move(chunk));
  return true;
}

absl::StatusOr<std::shared_ptr<Job>> TargetedRun::SubmitRound(int64_t round) {
  JobSpec spec = first_->spec();  // prepared: a round has nothing to prepare
  spec.prepare = nullptr;
  spec.paths = round_paths_[static_cast<size_t>(round)];
  const auto first_open = std::find(open_.begin(), open_.end(), 1);
  const auto last_open = std::find(open_.rbegin(), open_.rend(), 1);
  spec.column_end = spec.column_begin + (open_.rend() - last_open);
  spec.column_begin += first_open - open_.begin();
  for (;;) {
    absl::StatusOr<std::shared_ptr<Job>> job = engine_.Submit(spec);
    if (job.ok()) {
      spdlog::info("{}: round {} of {}: {} paths, {} columns short of the target in [{}, {})",
                   (*job)->id(), round, first_->id(), spec.paths, open_count_, spec.column_begin,
                   spec.column_end);
      bool cancelled = false;
      {
        absl::MutexLock lock(&mu_);
        cancelled = cancelled_;
        if (!cancelled) current_ = *job;
      }
      if (!cancelled) return job;
      (*job)->Cancel(absl::CancelledError("the call was cancelled"));
      return absl::CancelledError("the call was cancelled");
    }
    // A full queue or quota frees up; a job that fits no device does not.
    if (job.status().code() != absl::StatusCode::kResourceExhausted ||
        !engine_.CheckFits(spec).ok()) {
      return job.status();
    }
    if (absl::Status stop = StopStatus(spec); absl::IsDeadlineExceeded(stop)) return stop;
    if (!Wait(kQueueRetry)) return absl::CancelledError("the call was cancelled");
  }
}

}  // namespace pricer
