// JobManager, sweep jobs (JobSpec.sweep, docs/spec.md#sweeps): each trial is
// a job of its own, created by the sweep thread as workers become free;
// the sweep job follows its trials, copies their progress into its own log
// and ends with the chosen trial's model.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/util/status_macros.h"
#include "server/jobs/job_manager.h"
#include "sparrow/v1/job_state.h"
#include "spdlog/spdlog.h"

namespace sparrow::server {
namespace {

// A trial job's id (OwnSweepOf reads it back) and request_id (which makes
// creating a trial idempotent).
std::string TrialJobId(const std::string& parent_id, int index) {
  return absl::StrCat(parent_id, "-t", index);
}
std::string TrialRequestId(const std::string& parent_id, int index) {
  return absl::StrCat("sweep:", parent_id, ":trial-", index);
}

// What ChooseTrial reads of an ended trial job of `sweep`.
translate::TrialScore Score(const v1::Sweep& sweep, const v1::Job& trial) {
  const v1::Metrics& m = trial.metrics();
  translate::TrialScore s;
  s.ok = trial.state() == v1::Job::SUCCEEDED;
  s.validation = translate::SelectionOf(sweep, m).error;
  s.train_loss = trial.loss();
  s.sparsity_pct = m.sparsity_pct();
  s.model_order = m.model_order();
  s.trial = trial.trial_index();
  return s;
}

// Why a sweep whose trials have all ended chose none: only a succeeded trial
// is a candidate (a cancelled one holds a partial model), and it needs a
// finite validation error (or, for seeds alone without a validation split,
// training loss).
std::string NoChoice(const std::string& sweep_id,
                     const std::vector<std::optional<v1::Job>>& jobs) {
  int succeeded = 0, cancelled = 0, failed = 0;
  for (const auto& job : jobs) {
    succeeded += job->state() == v1::Job::SUCCEEDED;
    cancelled += job->state() == v1::Job::CANCELLED;
    failed += job->state() == v1::Job::FAILED;
  }
  return absl::StrCat(
      "no trial can be chosen: ", succeeded, " succeeded, ", cancelled,
      " cancelled, ", failed,
      " failed, and the sweep chooses among succeeded trials with a finite "
      "validation error (or, for seeds alone without a validation split, a "
      "training loss). Each trial's reason: sparrow status ",
      TrialJobId(sweep_id, 0),
      " (and -t1, ...); a trial's own model, "
      "partial for a cancelled one: sparrow model get ",
      TrialJobId(sweep_id, 0));
}

// Trials of one sweep unfinished at once: sweep.max_parallel, else the
// workers; on one sparrowd at most its workers (more would only wait in the
// queue, holding queue places), on replicas as many as asked.
int Parallel(const v1::Sweep& sweep, int workers, bool shared) {
  workers = std::max(1, workers);
  if (sweep.max_parallel() <= 0) return workers;
  return shared ? sweep.max_parallel()
                : std::min(sweep.max_parallel(), workers);
}

std::string DescribeChoice(const v1::Sweep& sweep,
                           const translate::Trial& trial, const v1::Job& job,
                           const std::vector<translate::TrialScore>& scores,
                           int chosen) {
  return absl::StrFormat(
      "chose trial %d (%s, job %s): %s; %.1f%% zero weights", trial.index,
      translate::TrialLabel(trial), job.id(),
      translate::ChoiceBasis(sweep, scores, chosen,
                             translate::SelectionOf(sweep, job.metrics())),
      job.metrics().sparsity_pct());
}

}  // namespace

absl::StatusOr<int64_t> JobManager::ValidateSweep(const std::string& tenant,
                                                  const v1::JobSpec& spec) {
  SPARROW_ASSIGN_OR_RETURN(std::vector<translate::Trial> trials,
                           translate::ExpandSweep(spec));
  int64_t memory = 0;
  for (translate::Trial& trial : trials) {
    // A warm path point starts from the point before it, which has the
    // same architecture; that model does not exist yet.
    if (trial.warm_from >= 0) trial.spec.clear_warm_start();
    absl::StatusOr<int64_t> m = ValidateSubmission(tenant, trial.spec);
    if (!m.ok()) {
      return absl::Status(m.status().code(),
                          absl::StrCat("spec.sweep, trial ", trial.index, " (",
                                       translate::TrialLabel(trial),
                                       "): ", m.status().message()));
    }
    memory = std::max(memory, *m);
  }
  return memory;
}

void JobManager::NotifySweep(const std::string& id) {
  std::lock_guard<std::mutex> lock(sweep_mu_);
  if (sweeps_due_.insert(id).second) sweep_queue_.push_back(id);
  sweep_cv_.notify_one();
}

void JobManager::SweepLoop() {
  std::unique_lock<std::mutex> lock(sweep_mu_);
  while (!sweep_stop_) {
    const absl::Time now = absl::Now();
    absl::Time wake = absl::InfiniteFuture();
    for (auto it = sweep_retry_.begin(); it != sweep_retry_.end();) {
      if (it->second > now) {
        wake = std::min(wake, it->second);
        ++it;
        continue;
      }
      if (sweeps_due_.insert(it->first).second) {
        sweep_queue_.push_back(it->first);
      }
      it = sweep_retry_.erase(it);
    }
    if (sweep_queue_.empty()) {
      if (wake == absl::InfiniteFuture()) {
        sweep_cv_.wait(lock);
      } else {
        sweep_cv_.wait_for(lock, absl::ToChronoNanoseconds(wake - now));
      }
      continue;
    }
    const std::string id = std::move(sweep_queue_.front());
    sweep_queue_.pop_front();
    sweeps_due_.erase(id);
    lock.unlock();
    const absl::Status s = AdvanceSweep(id);
    lock.lock();
    if (s.ok()) continue;
    // Look again later; meanwhile the other sweeps go on.
    absl::Duration pause = absl::Seconds(1);
    if (s.code() == absl::StatusCode::kFailedPrecondition) {
      pause = absl::Milliseconds(50);  // the sweep changed meanwhile
    } else if (s.code() != absl::StatusCode::kResourceExhausted) {
      spdlog::error("sweep job {}: {}; retrying", id, s.ToString());
    }
    sweep_retry_.emplace(id, absl::Now() + pause);
  }
}

absl::StatusOr<std::vector<std::optional<v1::Job>>> JobManager::TrialJobs(
    const std::string& tenant, const v1::Job& parent, int trials) {
  std::vector<std::optional<v1::Job>> jobs(trials);
  for (int i = 0; i < trials; ++i) {
    SPARROW_ASSIGN_OR_RETURN(
        jobs[i],
        store_->FindJobByRequestId(tenant, TrialRequestId(parent.id(), i)));
    if (jobs[i].has_value() && jobs[i]->parent_id() != parent.id()) {
      // Submit refuses request ids of this form: a store from elsewhere.
      return absl::FailedPreconditionError(absl::StrCat(
          "request_id ", TrialRequestId(parent.id(), i), " belongs to job ",
          jobs[i]->id(), ", not to a trial of this sweep"));
    }
  }
  return jobs;
}

absl::Status JobManager::AdvanceSweep(const std::string& id) {
  SPARROW_ASSIGN_OR_RETURN(JobRecord record, store_->GetJob(id));
  const std::string& tenant = record.tenant;
  v1::Job& parent = record.job;
  if (v1::IsFinal(parent.state())) {
    ForgetSweep(id);
    return absl::OkStatus();
  }
  // On a shared store a replica's claim starts the sweep (AdoptSweep), and
  // a replica that lost its lease leaves the sweep to the one that took it.
  if (shared_ && parent.state() == v1::Job::QUEUED) return absl::OkStatus();
  if (shared_) {
    bool lost;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = running_.find(id);
      lost = it != running_.end() && it->second->sweep && it->second->lost;
    }
    if (lost) {
      ForgetSweep(id);
      return absl::OkStatus();
    }
  }
  auto end = [&](const JobTransition& t) {
    absl::Status s = Transition(tenant, id, t).status();
    if (s.ok()) ForgetSweep(id);
    return s;
  };
  auto fail = [&](absl::string_view reason) {
    const bool cancelling = parent.state() == v1::Job::CANCELLING;
    return end({cancelling ? v1::Job::CANCELLED : v1::Job::FAILED,
                std::string(reason),
                "",
                nullptr,
                {parent.state()}});
  };
  absl::StatusOr<std::vector<translate::Trial>> trials =
      translate::ExpandSweep(parent.spec());
  if (!trials.ok()) return fail(trials.status().message());
  const int n = static_cast<int>(trials->size());
  if (parent.state() == v1::Job::QUEUED) {
    SPARROW_ASSIGN_OR_RETURN(
        parent,
        Transition(
            tenant, id,
            {v1::Job::RUNNING,
             absl::StrCat("started: ", n, n == 1 ? " trial, " : " trials, ",
                          std::min(n, Parallel(parent.spec().sweep(),
                                               options_.workers, shared_)),
                          " at a time"),
             "",
             nullptr,
             {v1::Job::QUEUED}}));
  }
  auto jobs = TrialJobs(tenant, parent, n);
  if (jobs.status().code() == absl::StatusCode::kFailedPrecondition) {
    return fail(jobs.status().message());
  }
  SPARROW_RETURN_IF_ERROR(jobs.status());
  SPARROW_RETURN_IF_ERROR(AnnounceTrialEnds(parent, *jobs));
  int created = 0, ended = 0, started = 0;
  for (const auto& job : *jobs) {
    created += job.has_value();
    ended += job.has_value() && v1::IsFinal(job->state());
    // A path point after a cancelled or failed one exists, but never ran.
    started += job.has_value() && !absl::StartsWith(job->reason(), "not run:");
  }
  if (parent.state() == v1::Job::CANCELLING) {
    SPARROW_RETURN_IF_ERROR(CancelTrials(tenant, *jobs));
    if (ended < created) return absl::OkStatus();  // their ends notify
    return end({v1::Job::CANCELLED,
                absl::StrCat("cancelled by the user; ", started, " of ", n,
                             " trials had started"),
                "",
                nullptr,
                {v1::Job::CANCELLING}});
  }
  if (ended < n) return StartTrials(tenant, parent, *trials, *jobs);
  std::vector<translate::TrialScore> scores;
  for (const auto& job : *jobs) {
    scores.push_back(Score(parent.spec().sweep(), *job));
  }
  const int chosen = translate::ChooseTrial(parent.spec().sweep(), scores);
  if (chosen < 0) return fail(NoChoice(id, *jobs));
  const v1::Job& best = *(*jobs)[chosen];
  SPARROW_ASSIGN_OR_RETURN(v1::TrainedModel model, store_->GetModel(best.id()));
  *model.mutable_sweep_trial() = translate::TrialOrigin((*trials)[chosen], n);
  const std::string choice = DescribeChoice(
      parent.spec().sweep(), (*trials)[chosen], best, scores, chosen);
  return end({v1::Job::SUCCEEDED,
              absl::StrCat(n, " trials ended; ", choice),
              choice,
              &model,
              {v1::Job::RUNNING}});
}

absl::Status JobManager::CancelTrials(
    const std::string& tenant,
    const std::vector<std::optional<v1::Job>>& jobs) {
  for (const auto& job : jobs) {
    if (!job.has_value() || v1::IsFinal(job->state())) continue;
    absl::Status s = Cancel(tenant, job->id()).status();
    // FAILED_PRECONDITION: it has just ended (and notifies).
    if (!s.ok() && s.code() != absl::StatusCode::kFailedPrecondition) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status JobManager::StartTrials(
    const std::string& tenant, const v1::Job& parent,
    const std::vector<translate::Trial>& trials,
    const std::vector<std::optional<v1::Job>>& jobs) {
  const int n = static_cast<int>(trials.size());
  auto before = [&](const translate::Trial& trial) -> const v1::Job* {
    return trial.warm_from >= 0 && jobs[trial.warm_from].has_value()
               ? &*jobs[trial.warm_from]
               : nullptr;
  };
  int unfinished = 0;
  for (int i = 0; i < n; ++i) {
    if (!jobs[i].has_value() || v1::IsFinal(jobs[i]->state())) continue;
    ++unfinished;
    // On a shared store the store is the queue: a QUEUED trial is claimed.
    if (shared_ || jobs[i]->state() != v1::Job::QUEUED) continue;
    bool known;
    {
      std::lock_guard<std::mutex> lock(mu_);
      known = queued_by_id_.count(jobs[i]->id()) > 0 ||
              running_.count(jobs[i]->id()) > 0;
    }
    if (known) continue;
    // Stored, but neither queued nor running: its queueing was cut short
    // (a store error).
    std::string not_run;
    SPARROW_ASSIGN_OR_RETURN(
        int64_t memory,
        TrialAdmission(tenant, jobs[i]->spec(), before(trials[i]), &not_run));
    SPARROW_RETURN_IF_ERROR(QueueTrial(tenant, *jobs[i], memory, not_run));
  }
  // Start trials in order while there is room; a warm path point waits for
  // the point before it.
  int room =
      Parallel(parent.spec().sweep(), options_.workers, shared_) - unfinished;
  for (int i = 0; i < n && room > 0; ++i) {
    const translate::Trial& trial = trials[i];
    if (jobs[i].has_value()) continue;
    if (trial.warm_from >= 0 &&
        !(jobs[trial.warm_from].has_value() &&
          v1::IsFinal(jobs[trial.warm_from]->state()))) {
      continue;
    }
    if (shared_) {  // the queue's counts are read from the store
      SPARROW_RETURN_IF_ERROR(CheckQueueLimits(tenant));  // full: wait
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      if (draining_) return absl::OkStatus();
      SPARROW_RETURN_IF_ERROR(CheckQueueLimits(tenant));  // full: wait
    }
    // A cancel acknowledged meanwhile starts no other trial.
    SPARROW_ASSIGN_OR_RETURN(JobRecord now, store_->GetJob(parent.id()));
    if (now.job.state() != v1::Job::RUNNING) {
      return absl::FailedPreconditionError("the sweep changed");
    }
    SPARROW_RETURN_IF_ERROR(StartTrial(tenant, parent, trial, before(trial)));
    --room;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> JobManager::TrialAdmission(const std::string& tenant,
                                                   const v1::JobSpec& spec,
                                                   const v1::Job* before,
                                                   std::string* not_run) {
  if (before != nullptr && before->state() != v1::Job::SUCCEEDED) {
    *not_run = absl::StrCat(
        "the path's point before (trial ", before->trial_index(), ") ended ",
        absl::AsciiStrToLower(v1::Job::State_Name(before->state())),
        "; a path goes on only from a point that succeeded");
    return 0;
  }
  absl::StatusOr<int64_t> memory = ValidateSubmission(tenant, spec);
  const absl::StatusCode code = memory.status().code();
  if (code == absl::StatusCode::kUnavailable ||
      code == absl::StatusCode::kInternal ||
      code == absl::StatusCode::kDataLoss) {
    return memory.status();
  }
  if (!memory.ok()) {
    *not_run = std::string(memory.status().message());
    return 0;
  }
  return *memory;
}

absl::Status JobManager::StartTrial(const std::string& tenant,
                                    const v1::Job& parent,
                                    const translate::Trial& trial,
                                    const v1::Job* before) {
  v1::Job job;
  *job.mutable_spec() = trial.spec;
  if (before != nullptr) {
    job.mutable_spec()->mutable_warm_start()->set_job_id(before->id());
  }
  job.set_id(TrialJobId(parent.id(), trial.index));
  job.set_priority(parent.priority());
  job.set_request_id(TrialRequestId(parent.id(), trial.index));
  job.set_parent_id(parent.id());
  job.set_trial_index(trial.index);
  std::string not_run;
  SPARROW_ASSIGN_OR_RETURN(
      int64_t memory, TrialAdmission(tenant, job.spec(), before, &not_run));
  job.set_memory_estimate_bytes(memory);
  bool existed = false;
  SPARROW_ASSIGN_OR_RETURN(v1::Job stored,
                           store_->CreateJob(tenant, job, &existed));
  if (!existed) {
    hub_->Publish(stored.id(), stored.last_seq());
    spdlog::info("job {} tenant {}: QUEUED (trial {} of sweep {}: {})",
                 stored.id(), tenant, trial.index, parent.id(),
                 translate::TrialLabel(trial));
  }
  return QueueTrial(tenant, stored, memory, not_run);
}

absl::Status JobManager::QueueTrial(const std::string& tenant,
                                    const v1::Job& job, int64_t memory,
                                    const std::string& not_run) {
  if (!not_run.empty()) {
    return Transition(tenant, job.id(),
                      {v1::Job::FAILED,
                       absl::StrCat("not run: ", not_run),
                       "",
                       nullptr,
                       {v1::Job::QUEUED}})
        .status();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (shared_) {  // the store is the queue: some replica's worker claims it
    cv_.notify_one();
    return absl::OkStatus();
  }
  if (draining_) return absl::OkStatus();  // QUEUED: recovered at the start
  if (queued_by_id_.count(job.id()) > 0 || running_.count(job.id()) > 0) {
    return absl::OkStatus();
  }
  Enqueue({false, job.priority(), next_order_++, job.id(), tenant, memory});
  UpdateGauges();
  return absl::OkStatus();
}

void JobManager::AdoptSweep(const ClaimedJob& claimed) {
  const v1::Job& job = claimed.record.job;
  auto running = std::make_shared<RunningJob>();
  running->fence = job.attempts();
  running->sweep = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_[job.id()] = running;
    UpdateGauges();
  }
  hub_->Publish(job.id(), job.last_seq());
  spdlog::info(
      "job {} tenant {}: RUNNING on replica {}, which starts the sweep's "
      "trials ({})",
      job.id(), claimed.record.tenant, replica_, job.reason());
  NotifySweep(job.id());
}

void JobManager::ForgetSweep(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(id);
  if (it == running_.end() || !it->second->sweep) return;
  running_.erase(it);
  UpdateGauges();
}

void JobManager::ReleaseSweeps() {
  std::vector<std::pair<std::string, int32_t>> sweeps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, running] : running_) {
      if (running->sweep) sweeps.emplace_back(id, running->fence.load());
    }
  }
  // Another replica may take them over at once.
  for (const auto& [id, fence] : sweeps) {
    store_->RenewLease(id, fence, absl::ZeroDuration()).IgnoreError();
    ForgetSweep(id);
  }
}

std::string JobManager::OwnSweepOf(const std::string& job_id) const {
  const size_t at = job_id.rfind("-t");
  if (at == std::string::npos || at + 2 == job_id.size() ||
      job_id.find_first_not_of("0123456789", at + 2) != std::string::npos) {
    return "";
  }
  std::string sweep = job_id.substr(0, at);
  auto it = running_.find(sweep);
  return it != running_.end() && it->second->sweep ? sweep : "";
}

absl::StatusOr<v1::Job> JobManager::CancelSweep(const std::string& tenant,
                                                const v1::Job& job) {
  const std::string& id = job.id();
  SPARROW_ASSIGN_OR_RETURN(
      v1::Job cancelling,
      Transition(tenant, id,
                 {v1::Job::CANCELLING,
                  "cancel requested by the user; its trials are being "
                  "cancelled",
                  "",
                  nullptr,
                  {v1::Job::QUEUED, v1::Job::RUNNING}}));
  NotifySweep(id);
  return cancelling;
}

absl::Status JobManager::DescribeSweep(const std::string& tenant,
                                       v1::Job* job) {
  absl::StatusOr<std::vector<translate::Trial>> trials =
      translate::ExpandSweep(job->spec());
  if (!trials.ok()) return absl::OkStatus();  // the job FAILED saying why
  const int n = static_cast<int>(trials->size());
  auto jobs = TrialJobs(tenant, *job, n);
  // A trial's request id taken by another job fails the sweep (saying so).
  if (jobs.status().code() == absl::StatusCode::kFailedPrecondition) {
    return absl::OkStatus();
  }
  SPARROW_RETURN_IF_ERROR(jobs.status());
  std::vector<translate::TrialScore> scores;
  for (int i = 0; i < n; ++i) {
    v1::SweepTrial* t = job->add_trials();
    t->set_index(i);
    t->set_label(translate::TrialLabel((*trials)[i]));
    // A trial without a job has not started: it waits, or it never will.
    if (job->state() == v1::Job::CANCELLING ||
        job->state() == v1::Job::CANCELLED) {
      t->set_state(v1::Job::CANCELLED);
      t->set_reason("not started: the sweep was cancelled");
    } else if (v1::IsFinal(job->state())) {
      t->set_state(v1::Job::CANCELLED);
      t->set_reason(absl::StrCat(
          "not started: the sweep ended ",
          absl::AsciiStrToLower(v1::Job::State_Name(job->state()))));
    } else {
      t->set_state(v1::Job::QUEUED);
      t->set_reason("waiting for a worker or for the path's point before");
    }
    translate::TrialScore score;
    if (const auto& trial = (*jobs)[i]; trial.has_value()) {
      t->set_job_id(trial->id());
      t->set_state(trial->state());
      t->set_reason(trial->reason());
      t->set_iterations(trial->iterations());
      if (trial->has_metrics()) *t->mutable_metrics() = trial->metrics();
      score = Score(job->spec().sweep(), *trial);
    }
    scores.push_back(score);
  }
  if (job->state() == v1::Job::SUCCEEDED) {
    const int chosen = translate::ChooseTrial(job->spec().sweep(), scores);
    if (chosen >= 0) job->set_chosen_trial(chosen);
  }
  return absl::OkStatus();
}

absl::Status JobManager::AnnounceTrialEnds(
    const v1::Job& parent, const std::vector<std::optional<v1::Job>>& jobs) {
  const auto& announced = parent.trial_ends();
  std::vector<v1::ProgressEvent> events;
  for (const auto& job : jobs) {
    if (!job.has_value() || !v1::IsFinal(job->state()) ||
        absl::c_linear_search(announced, job->trial_index())) {
      continue;
    }
    v1::ProgressEvent& e = events.emplace_back();
    e.set_kind(v1::ProgressEvent::TRIAL_END);
    e.set_trial(job->trial_index());
    e.set_state(job->state());
    e.set_reason(job->reason());
    e.set_iteration(job->iterations());
    if (job->has_metrics()) {
      const double v =
          translate::SelectionOf(parent.spec().sweep(), job->metrics()).value;
      if (std::isfinite(v)) e.set_validation_metric(v);
      e.set_sparsity_pct(job->metrics().sparsity_pct());
    }
  }
  if (events.empty()) return absl::OkStatus();
  SPARROW_ASSIGN_OR_RETURN(
      std::vector<v1::ProgressEvent> stored,
      store_->AppendEvents(parent.id(), std::move(events), kNoFence));
  // Empty: another replica (or a retried commit) announced them already.
  if (!stored.empty()) hub_->Publish(parent.id(), stored.back().seq());
  return absl::OkStatus();
}

void JobManager::MirrorEvents(const v1::Job& trial,
                              const std::vector<v1::ProgressEvent>& events) {
  std::vector<v1::ProgressEvent> copies;
  copies.reserve(events.size());
  for (const v1::ProgressEvent& e : events) {
    if (e.kind() != v1::ProgressEvent::ITERATION) continue;
    v1::ProgressEvent& c = copies.emplace_back(e);
    c.clear_seq();
    c.clear_job_id();
    c.set_trial(trial.trial_index());
  }
  if (copies.empty()) return;
  auto stored =
      store_->AppendEvents(trial.parent_id(), std::move(copies), kNoFence);
  if (!stored.ok()) {
    // The trial's own log has them; the sweep's copy is for watching.
    spdlog::warn("sweep job {}: cannot copy events of trial {}: {}",
                 trial.parent_id(), trial.trial_index(),
                 stored.status().ToString());
    return;
  }
  hub_->Publish(trial.parent_id(), stored->back().seq());
}

}  // namespace sparrow::server
