// JobManager on a store that replicas share: workers claim jobs from the
// store instead of a queue of this replica's, a thread renews the leases of
// the running jobs, and the store's listener brings the other replicas'
// events, new jobs and cancels.
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "server/jobs/job_manager.h"
#include "sparrow/v1/job_state.h"
#include "sparrow/v1/worker.pb.h"
#include "spdlog/spdlog.h"

namespace sparrow::server {

void JobManager::ClaimLoop() {
  while (true) {
    std::optional<ClaimedJob> claimed;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (draining_) return;
    }
    claimed = Claim();
    if (!claimed.has_value()) {
      std::unique_lock<std::mutex> lock(mu_);
      if (draining_) return;
      cv_.wait_for(lock, absl::ToChronoNanoseconds(options_.claim_poll));
      continue;
    }
    const v1::Job& job = claimed->record.job;
    if (job.spec().has_sweep()) {  // followed, not run by this worker
      AdoptSweep(*claimed);
      continue;
    }
    QueueEntry entry{
        claimed->resumed, job.priority(),         0,
        job.id(),         claimed->record.tenant, job.memory_estimate_bytes()};
    auto running = std::make_shared<RunningJob>();
    running->fence = job.attempts();
    {
      std::lock_guard<std::mutex> lock(mu_);
      memory_in_use_ += entry.memory;
      running_[entry.id] = running;
      UpdateGauges();
    }
    hub_->Publish(job.id(), job.last_seq());
    spdlog::info("job {} tenant {}: RUNNING on replica {}, attempt {} ({})",
                 job.id(), entry.tenant, replica_, job.attempts(),
                 job.reason());
    RunJob(entry, running.get(), std::move(claimed->record.job));
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(entry.id);
    memory_in_use_ -= entry.memory;
    UpdateGauges();
  }
}

std::optional<ClaimedJob> JobManager::Claim() {
  int64_t memory_left = std::numeric_limits<int64_t>::max();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A job alone may always run (Submit refused any over the budget).
    if (memory_in_use_ > 0) memory_left = memory_budget_ - memory_in_use_;
  }
  if (memory_left <= 0) return std::nullopt;
  auto claimed = store_->ClaimJob(replica_, options_.lease_expiry, memory_left);
  if (!claimed.ok()) {
    spdlog::error("replica {}: cannot claim a job: {}", replica_,
                  claimed.status().ToString());
    return std::nullopt;
  }
  return *std::move(claimed);
}

void JobManager::LeaseLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!lease_stop_) {
    lease_cv_.wait_for(lock, absl::ToChronoNanoseconds(options_.lease_renew),
                       [this] { return lease_stop_ || lease_check_; });
    if (lease_stop_) return;
    lease_check_ = false;
    std::vector<std::pair<std::string, std::shared_ptr<RunningJob>>> jobs(
        running_.begin(), running_.end());
    lock.unlock();
    for (auto& [id, running] : jobs) Renew(id, running.get());
    auto queued = store_->CountQueued("");
    if (queued.ok()) metrics_->SetQueueDepth(static_cast<double>(queued->all));
    lock.lock();
  }
}

void JobManager::Renew(const std::string& id, RunningJob* running) {
  const int32_t fence = running->fence.load();
  if (fence == 0 || running->lost.load()) return;
  auto job = store_->RenewLease(id, fence, options_.lease_expiry);
  if (!job.ok()) {
    if (IsLostLease(job.status())) {
      spdlog::warn("job {}: {}", id, std::string(job.status().message()));
      running->lost = true;  // the attempt's runner stops its worker
    } else {
      spdlog::error("job {}: cannot renew its lease: {}", id,
                    job.status().ToString());
    }
    return;
  }
  if (job->state() != v1::Job::CANCELLING || running->cancel.load()) return;
  // Cancelled through another replica: stop the worker as a local cancel.
  std::lock_guard<std::mutex> lock(running->mu);
  running->cancel = true;
  if (running->worker != nullptr) {
    v1::WorkerControl control;
    control.set_stop(v1::WorkerControl::CANCEL);
    running->worker->Send(control).IgnoreError();
  }
}

void JobManager::OnStoreChange(const std::string& job_id, int64_t seq) {
  if (job_id.empty()) {
    hub_->WakeAll();
  } else {
    hub_->Publish(job_id, seq);
  }
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();  // a new job, or memory freed elsewhere
  // A sweep followed here, or one of its trials, changed; after a reconnect
  // (events may have been missed) every sweep is looked at.
  for (const auto& [id, running] : running_) {
    if (running->sweep && (job_id.empty() || id == job_id)) NotifySweep(id);
  }
  if (const std::string sweep = OwnSweepOf(job_id); !sweep.empty()) {
    NotifySweep(sweep);
  }
  if (job_id.empty() || running_.count(job_id) > 0) {
    lease_check_ = true;  // perhaps a cancel sent to another replica
    lease_cv_.notify_all();
  }
}

absl::StatusOr<v1::Job> JobManager::CancelElsewhere(const std::string& tenant,
                                                    const std::string& id) {
  // The job may move on between the read and the write (a claim, its end):
  // a refused transition is read again.
  for (int tries = 0; tries < 5; ++tries) {
    SPARROW_ASSIGN_OR_RETURN(v1::Job job, GetJob(tenant, id));
    JobTransition t;
    switch (job.state()) {
      case v1::Job::QUEUED:
        t = {v1::Job::CANCELLED,
             "cancelled by the user before it started",
             "",
             nullptr,
             {v1::Job::QUEUED}};
        break;
      case v1::Job::RUNNING:
        // The replica running it hears of it and stops the job; if that
        // replica is gone, the next claim after its lease ends the job.
        t = {v1::Job::CANCELLING,
             absl::StrCat("cancel requested by the user (through replica ",
                          replica_, ")"),
             "",
             nullptr,
             {v1::Job::RUNNING}};
        break;
      case v1::Job::CANCELLING:
        return job;
      default:
        return absl::FailedPreconditionError(absl::StrCat(
            "job ", id, " already ended (", v1::Job::State_Name(job.state()),
            "); only queued or running jobs can be cancelled"));
    }
    auto done = Transition(tenant, id, t);
    if (done.ok() ||
        done.status().code() != absl::StatusCode::kFailedPrecondition) {
      return done;
    }
  }
  return absl::AbortedError(absl::StrCat(
      "job ", id, " changed state while it was being cancelled; retry"));
}

}  // namespace sparrow::server
