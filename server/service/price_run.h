// What one Price call streams: the chunks of one engine job (JobRun), or the
// final columns of the rounds of a targeted request (TargetedRun,
// targeted_run.h). The reactor (price_reactor.h) reads either the same way.
#pragma once

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "server/scheduler/job.h"
#include "server/scheduler/result_stream.h"

namespace pricer {

class PriceRun {
 public:
  virtual ~PriceRun() = default;
  // The call's (first) job: its id, resolved spec and plan, for `accepted`
  // and the logs.
  virtual const Job& job() const = 0;
  // The chunks to send; closed with the call's outcome.
  virtual ResultStream& results() = 0;
  // Stops the work; the stream closes with `why` (no-op once closed).
  virtual void Cancel(absl::Status why) = 0;
  // For `finished`, the metrics and the access log.
  virtual JobSummary Summary() const = 0;
};

// A request without a target: one engine job, streamed as it is.
class JobRun final : public PriceRun {
 public:
  explicit JobRun(std::shared_ptr<Job> job) : job_(std::move(job)) {}
  const Job& job() const override { return *job_; }
  ResultStream& results() override { return job_->results(); }
  void Cancel(absl::Status why) override { job_->Cancel(std::move(why)); }
  JobSummary Summary() const override { return job_->Summary(); }

 private:
  const std::shared_ptr<Job> job_;
};

}  // namespace pricer
