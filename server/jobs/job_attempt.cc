// JobManager, running a job: its attempts (each in a worker process, see
// AttemptRunner), how each ended, and the crashes of its workers.
#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/train/memory.h"
#include "core/util/status_macros.h"
#include "server/jobs/job_manager.h"
#include "server/jobs/worker_process.h"
#include "server/store/job_files.h"
#include "server/worker/worker.h"
#include "sparrow/v1/checkpoint.pb.h"
#include "sparrow/v1/worker.pb.h"
#include "spdlog/spdlog.h"

namespace sparrow::server {
namespace {

// A worker killed by SIGKILL that sparrowd did not kill was most likely the
// kernel's OOM killer's choice (workers volunteer: oom_score_adj 1000).
std::string DescribeDeath(const std::string& how) {
  if (how.find("signal 9 ") != std::string::npos) {
    return absl::StrCat(how,
                        ", most likely by the kernel's out-of-memory killer");
  }
  return how;
}

}  // namespace

// One attempt of a job: spawns its worker process, sends it the job, stores
// and publishes what it reports, passes cancel and shutdown on to it (and
// kills it when it does not stop in time), and records how the job ended.
class JobManager::AttemptRunner {
 public:
  AttemptRunner(JobManager* manager, const QueueEntry& entry,
                RunningJob* running)
      : m_(manager), entry_(entry), running_(running) {}

  Attempt Run(const v1::Job& job) {
    job_ = &job;
    if (absl::Status s = Launch(job); !s.ok()) {
      if (s.code() == absl::StatusCode::kNotFound) {
        return End(m_->Fail(entry_, std::string(s.message()), fence()));
      }
      spdlog::error("job {}: cannot start an attempt: {}", entry_.id,
                    s.ToString());
      return Attempt::kStoreFailed;
    }
    while (true) {
      v1::WorkerReport report;
      const absl::Status next = worker_->Next(absl::Milliseconds(100), &report);
      if (next.ok()) {
        if (absl::Status s = Handle(&report); !s.ok()) {
          worker_->Kill();
          Release();
          worker_->Wait();
          if (IsLostLease(s)) return Lost(s);
          spdlog::error("job {}: the store failed: {}", entry_.id,
                        s.ToString());
          return Attempt::kStoreFailed;
        }
      } else if (next.code() != absl::StatusCode::kDeadlineExceeded) {
        break;  // the worker has ended (or wrote garbage as it died)
      }
      Steer();
    }
    return Finish();
  }

  // How the worker died (kCrashed), and the last iteration it reported.
  const std::string& death() const { return death_; }
  int last_iteration() const { return last_iteration_; }

 private:
  enum class Kill { kNone, kCancel, kShutdown, kDeadline, kLost };

  int32_t fence() const { return running_->fence.load(); }
  // A transition of this attempt: refused once another replica has taken
  // the job over.
  JobTransition Fenced(JobTransition t) const {
    t.fence = fence();
    return t;
  }
  Attempt Lost(const absl::Status& why) {
    spdlog::warn(
        "job {} tenant {}: this replica lost the job ({}); its worker "
        "was stopped",
        entry_.id, entry_.tenant, std::string(why.message()));
    return Attempt::kLost;
  }

  absl::Status Launch(const v1::Job& job) {
    v1::WorkerRequest request;
    request.set_job_id(entry_.id);
    *request.mutable_spec() = job.spec();
    SPARROW_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint,
                             m_->store_->GetCheckpoint(entry_.id));
    if (checkpoint.has_value() &&
        request.mutable_checkpoint()->ParseFromString(*checkpoint)) {
      request.set_resume(true);
    }
    SPARROW_ASSIGN_OR_RETURN(
        JobFiles files, ReadJobFiles(m_->store_, entry_.tenant, job.spec()));
    request.set_dataset(std::move(files.data));
    request.set_validation_dataset(std::move(files.validation));
    request.set_test_dataset(std::move(files.test));
    SPARROW_RETURN_IF_ERROR(ReadWarmStart(job, &request));
    const JobManagerOptions& o = m_->options_;
    request.set_memory_limit_bytes(o.worker_memory_limit_override > 0
                                       ? o.worker_memory_limit_override
                                       : o.limits.max_job_memory);
    request.set_max_model_params(o.limits.max_model_params);
    request.set_checkpoint_every(o.checkpoint_every);
    request.set_checkpoint_min_seconds(
        absl::ToDoubleSeconds(o.checkpoint_min_interval));
    request.set_min_event_interval_seconds(
        absl::ToDoubleSeconds(o.min_event_interval));
    request.set_event_flush_seconds(
        absl::ToDoubleSeconds(o.event_flush_interval));
    request.set_deadline_seconds(o.limits.job_deadline_seconds);
    SPARROW_ASSIGN_OR_RETURN(worker_, WorkerProcess::Spawn(m_->worker_binary_));
    attempt_start_ = absl::Now();
    {
      std::lock_guard<std::mutex> lock(running_->mu);
      running_->worker = worker_.get();
    }
    // A worker that dies before it has read the job is seen by Next.
    worker_->Send(request).IgnoreError();
    return absl::OkStatus();
  }

  // The model of spec.warm_start.job_id (checked at admission); NOT_FOUND,
  // which fails the job, when it is no longer there. A trial whose warm start
  // is another trial of its sweep is a path's point: the sweep set it.
  absl::Status ReadWarmStart(const v1::Job& job, v1::WorkerRequest* request) {
    const v1::JobSpec& spec = job.spec();
    if (!spec.warm_start().has_job_id()) return absl::OkStatus();
    v1::Job source;
    absl::StatusOr<v1::TrainedModel> model =
        m_->GetModel(entry_.tenant, spec.warm_start().job_id(), &source);
    const absl::StatusCode code = model.status().code();
    if (code == absl::StatusCode::kNotFound ||
        code == absl::StatusCode::kFailedPrecondition) {
      return absl::NotFoundError(
          absl::StrCat("warm_start.job_id: ", model.status().message()));
    }
    if (!model.ok()) return model.status();
    *request->mutable_warm_start() = *std::move(model);
    request->set_warm_start_from_path(!job.parent_id().empty() &&
                                      source.parent_id() == job.parent_id());
    return absl::OkStatus();
  }

  // Stores (then publishes) what the worker reports. An error is the
  // store's.
  absl::Status Handle(v1::WorkerReport* report) {
    switch (report->report_case()) {
      case v1::WorkerReport::kEvents: {
        auto& in = *report->mutable_events()->mutable_events();
        if (in.empty()) return absl::OkStatus();
        last_iteration_ = in.rbegin()->iteration();
        const double n = static_cast<double>(in.size());
        std::vector<v1::ProgressEvent> events(
            std::make_move_iterator(in.begin()),
            std::make_move_iterator(in.end()));
        std::vector<v1::ProgressEvent> stored;
        {
          std::lock_guard<std::mutex> lock(running_->mu);
          SPARROW_ASSIGN_OR_RETURN(
              stored,
              m_->store_->AppendEvents(entry_.id, std::move(events), fence()));
          m_->hub_->Publish(entry_.id, stored.back().seq());
          m_->metrics_->CountEvents(n);
          v1::WorkerControl ack;
          ack.set_events_stored(true);
          worker_->Send(ack).IgnoreError();  // a dead worker is seen by Next
        }
        if (!job_->parent_id().empty()) m_->MirrorEvents(*job_, stored);
        return absl::OkStatus();
      }
      case v1::WorkerReport::kCheckpoint:
        checkpoint_iteration_ = report->checkpoint().iteration();
        return m_->store_->PutCheckpoint(
            entry_.id, report->checkpoint().SerializeAsString(), fence());
      case v1::WorkerReport::kLog:
        spdlog::info("job {} tenant {}: {}", entry_.id, entry_.tenant,
                     report->log());
        return absl::OkStatus();
      case v1::WorkerReport::kOutcome:
        outcome_ = std::move(*report->mutable_outcome());
        return absl::OkStatus();
      default:
        return absl::OkStatus();
    }
  }

  // Passes a cancel or a shutdown on to the worker, and kills a worker that
  // has not stopped stop_grace after it was asked to (or after the deadline).
  void Steer() {
    if (kill_ != Kill::kNone || outcome_.has_value()) return;
    const absl::Time now = absl::Now();
    const JobManagerOptions& o = m_->options_;
    if (running_->cancel.load() && !cancel_sent_) {
      cancel_sent_ = true;
      asked_ = now;
      SendStop(v1::WorkerControl::CANCEL);
    }
    if (m_->shutting_down_.load() && !shutdown_sent_) {
      shutdown_sent_ = true;
      asked_ = now;
      SendStop(v1::WorkerControl::SHUTDOWN);
    }
    Kill kill = Kill::kNone;
    if (running_->lost.load()) {
      kill = Kill::kLost;
    } else if ((cancel_sent_ || shutdown_sent_) &&
               now - asked_ > o.stop_grace) {
      kill = shutdown_sent_ ? Kill::kShutdown : Kill::kCancel;
    } else if (o.limits.job_deadline_seconds > 0 &&
               now - attempt_start_ >
                   absl::Seconds(o.limits.job_deadline_seconds) +
                       o.stop_grace) {
      kill = Kill::kDeadline;
    }
    if (kill != Kill::kNone) {
      kill_ = kill;
      worker_->Kill();
    }
  }

  void SendStop(v1::WorkerControl::Stop stop) {
    v1::WorkerControl control;
    control.set_stop(stop);
    worker_->Send(control).IgnoreError();  // a dead worker is seen by Next
  }

  // The worker has ended: records its outcome, or says how it died.
  // Cancel must no longer reach the worker.
  void Release() {
    std::lock_guard<std::mutex> lock(running_->mu);
    running_->worker = nullptr;
  }

  Attempt Finish() {
    Release();
    const std::string how = worker_->Wait();
    if (outcome_.has_value()) return Apply(*outcome_);
    switch (kill_) {
      case Kill::kShutdown:
        spdlog::info(
            "job {} tenant {}: its worker did not stop within {} and was "
            "killed; the job resumes from its checkpoint at iteration {}",
            entry_.id, entry_.tenant,
            absl::FormatDuration(m_->options_.stop_grace),
            checkpoint_iteration_);
        return Attempt::kEnded;
      case Kill::kCancel:
        return End(m_->Transition(
            entry_.tenant, entry_.id,
            Fenced({v1::Job::CANCELLED,
                    absl::StrCat("cancelled by the user at iteration ",
                                 last_iteration_,
                                 " (its worker was stopped in the middle of an "
                                 "iteration)"),
                    "",
                    nullptr,
                    {v1::Job::RUNNING, v1::Job::CANCELLING}})));
      case Kill::kDeadline:
        return End(
            m_->Fail(entry_,
                     DeadlineReason(last_iteration_,
                                    m_->options_.limits.job_deadline_seconds),
                     fence()));
      case Kill::kLost:
        return Lost(absl::AbortedError(
            "another replica took it over after its lease expired"));
      case Kill::kNone:
        break;
    }
    death_ = DescribeDeath(how);
    return Attempt::kCrashed;
  }

  Attempt Apply(const v1::WorkerReport::Outcome& o) {
    spdlog::info("job {} tenant {}: worker peak memory {} (estimated {})",
                 entry_.id, entry_.tenant,
                 core::FormatBytes(o.peak_memory_bytes()),
                 core::FormatBytes(entry_.memory));
    using Outcome = v1::WorkerReport::Outcome;
    const std::vector<v1::Job::State> from = {v1::Job::RUNNING,
                                              v1::Job::CANCELLING};
    switch (o.kind()) {
      case Outcome::SUCCEEDED:
        return End(m_->Transition(entry_.tenant, entry_.id,
                                  Fenced({v1::Job::SUCCEEDED, o.reason(),
                                          o.summary(), &o.model(), from})));
      case Outcome::CANCELLED:  // with the model it had reached, if any
        return End(m_->Transition(
            entry_.tenant, entry_.id,
            Fenced({v1::Job::CANCELLED, o.reason(), "",
                    o.has_model() ? &o.model() : nullptr, from})));
      case Outcome::STOPPED:
        spdlog::info(
            "job {} tenant {}: checkpointed at iteration {} for the restart",
            entry_.id, entry_.tenant, checkpoint_iteration_);
        return Attempt::kEnded;
      default:  // FAILED, DEADLINE
        return End(m_->Fail(entry_, o.reason(), fence(),
                            o.has_model() ? &o.model() : nullptr));
    }
  }

  // A final transition the store could not record: the job goes back to
  // the queue. One the job's state refused (it ended meanwhile) is logged.
  Attempt End(const absl::StatusOr<v1::Job>& job) { return End(job.status()); }
  Attempt End(const absl::Status& s) {
    if (s.ok()) return Attempt::kEnded;
    if (IsLostLease(s)) return Lost(s);
    spdlog::error("job {}: {}", entry_.id, s.ToString());
    return s.code() == absl::StatusCode::kFailedPrecondition
               ? Attempt::kEnded
               : Attempt::kStoreFailed;
  }

  JobManager* m_;
  const QueueEntry& entry_;
  const v1::Job* job_ = nullptr;  // as the attempt started
  RunningJob* running_;
  absl::Time attempt_start_;
  std::unique_ptr<WorkerProcess> worker_;
  std::optional<v1::WorkerReport::Outcome> outcome_;
  bool cancel_sent_ = false;
  bool shutdown_sent_ = false;
  absl::Time asked_;
  Kill kill_ = Kill::kNone;
  int last_iteration_ = 0;
  int checkpoint_iteration_ = 0;
  std::string death_;
};

void JobManager::RunJob(const QueueEntry& entry, RunningJob* running,
                        std::optional<v1::Job> claimed) {
  const std::string& id = entry.id;
  const std::string& tenant = entry.tenant;
  int store_failures = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = store_failures_.find(id);
    if (it != store_failures_.end()) store_failures = it->second;
  }
  absl::StatusOr<v1::Job> job =
      claimed.has_value() ? *std::move(claimed)
                          : Transition(tenant, id,
                                       {v1::Job::RUNNING,
                                        StartReason(entry, store_failures),
                                        "",
                                        nullptr,
                                        {v1::Job::QUEUED, v1::Job::RUNNING}});
  if (!job.ok() && running->cancel.load()) {
    // A recovered job (RUNNING in the store) cancelled while this worker
    // was taking it: it is CANCELLING, and ends here.
    auto s = Transition(tenant, id,
                        {v1::Job::CANCELLED,
                         "cancelled by the user before it resumed",
                         "",
                         nullptr,
                         {v1::Job::CANCELLING}});
    if (!s.ok())
      spdlog::info("job {}: {}", id, std::string(s.status().message()));
    return;
  }
  if (!job.ok()) {
    spdlog::error("job {}: cannot start: {}", id, job.status().ToString());
    if (job.status().code() != absl::StatusCode::kFailedPrecondition) {
      Requeue(entry, store_failures + 1);
    }
    return;
  }
  running->fence = job->attempts();
  while (true) {
    AttemptRunner attempt(this, entry, running);
    const Attempt ended = attempt.Run(*job);
    if (ended == Attempt::kStoreFailed)
      return Requeue(entry, store_failures + 1);
    if (ended == Attempt::kEnded || ended == Attempt::kLost) break;
    if (!RecordCrash(entry, running, attempt.death(), attempt.last_iteration()))
      break;
    if (shutting_down_) break;  // RUNNING: resumes at the next start
  }
  if (shared_ && shutting_down_) {
    // Stopped for a shutdown: another replica may resume the job at once.
    store_->RenewLease(id, running->fence.load(), absl::ZeroDuration())
        .IgnoreError();
  }
  std::lock_guard<std::mutex> lock(mu_);
  store_failures_.erase(id);
}

std::string JobManager::StartReason(const QueueEntry& entry,
                                    int store_failures) {
  if (store_failures > 0) {
    return absl::StrCat(
        "resumed after ", store_failures,
        store_failures == 1 ? " store failure" : " store failures");
  }
  if (!entry.resume) return "started";
  auto bytes = store_->GetCheckpoint(entry.id);
  v1::JobCheckpoint checkpoint;
  if (bytes.ok() && bytes->has_value() && checkpoint.ParseFromString(**bytes)) {
    return absl::StrCat(
        "resumed after a restart from the checkpoint at "
        "iteration ",
        checkpoint.iteration());
  }
  return "restarted from the beginning after a restart (no checkpoint yet)";
}

bool JobManager::RecordCrash(const QueueEntry& entry, RunningJob* running,
                             const std::string& how, int iteration) {
  auto record = store_->GetJob(entry.id);
  if (!record.ok()) {
    Requeue(entry, 1);
    return false;
  }
  const int crashes = record->job.worker_crashes() + 1;
  const int limit = std::max(1, options_.max_worker_crashes);
  spdlog::warn(
      "job {} tenant {}: its worker process {} at iteration {} ({} of {})",
      entry.id, entry.tenant, how, iteration, crashes, limit);
  JobTransition t;
  t.fence = running->fence.load();
  t.worker_crashed = true;
  t.from = {v1::Job::RUNNING, v1::Job::CANCELLING};
  if (crashes >= limit) {
    t.to = v1::Job::FAILED;
    t.reason = absl::StrCat(
        "the job crashed its worker ", crashes,
        crashes == 1 ? " time" : " times", " (the last one ", how,
        ", at iteration ", iteration,
        "); it needs more memory than this machine can give, or it hits a "
        "bug: try a smaller model or less data, and report it if it "
        "persists");
  } else {
    t.to = v1::Job::RUNNING;
    t.reason = absl::StrCat("its worker process ", how, " at iteration ",
                            iteration, "; attempt ", record->job.attempts() + 1,
                            " resumes from the last checkpoint");
  }
  auto s = Transition(entry.tenant, entry.id, t);
  if (!s.ok()) {
    spdlog::error("job {}: {}", entry.id, s.status().ToString());
    if (s.status().code() != absl::StatusCode::kFailedPrecondition &&
        !IsLostLease(s.status())) {
      Requeue(entry, 1);
    }
    return false;
  }
  running->fence = s->attempts();
  return t.to == v1::Job::RUNNING;
}

}  // namespace sparrow::server
