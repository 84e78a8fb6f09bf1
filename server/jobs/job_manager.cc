// JobManager: start-up and recovery, the queue and its worker threads,
// cancellation and the job's state transitions. Admission is in
// job_admission.cc; running a job, attempt by attempt, in job_attempt.cc.
#include "server/jobs/job_manager.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "sparrow/v1/job_state.h"
#include "sparrow/v1/worker.pb.h"
#include "spdlog/spdlog.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/text.h"

namespace sparrow::server {
namespace {

std::string Lower(v1::Job::State s) {
  std::string name = v1::Job::State_Name(s);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return name;
}

// Cancel's answer for a job that has ended.
absl::Status AlreadyEnded(const std::string& id, v1::Job::State state) {
  return absl::FailedPreconditionError(
      absl::StrCat("job ", id, " already ", Lower(state),
                   "; only queued or running jobs can be cancelled"));
}

// Exponential pause before retrying a job whose attempt the store could not
// record: 1 s, 2 s, 4 s, ... at most a minute.
absl::Duration RetryPause(int failures) {
  return std::min(
      absl::Seconds(60),
      absl::Seconds(int64_t{1} << std::min(std::max(failures - 1, 0), 6)));
}

std::string OwnExecutable() {
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : path.string();
}

std::string DefaultReplicaName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return absl::StrCat(host[0] != '\0' ? host : "sparrowd", "-", getpid());
}

int64_t PhysicalMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? int64_t{pages} * page : int64_t{8} << 30;
}

}  // namespace

JobManager::JobManager(Store* store, EventHub* hub, ServerMetrics* metrics,
                       JobManagerOptions options)
    : store_(store),
      hub_(hub),
      metrics_(metrics),
      options_(options),
      memory_budget_(options.limits.max_total_job_memory > 0
                         ? options.limits.max_total_job_memory
                         : PhysicalMemory() / 4 * 3),
      worker_binary_(options.worker_binary.empty() ? OwnExecutable()
                                                   : options.worker_binary),
      shared_(store->shared()),
      replica_(options.replica_name.empty() ? DefaultReplicaName()
                                            : options.replica_name) {}

JobManager::~JobManager() { Shutdown(); }

absl::Status JobManager::Start() {
  if (worker_binary_.empty() || access(worker_binary_.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the worker program '", worker_binary_,
        "' cannot be run; jobs run in worker processes of sparrowd's own "
        "executable"));
  }
  if (shared_) {
    // This replica's jobs from before a restart (under the same name) are
    // its to resume now rather than after their leases expire.
    SPARROW_ASSIGN_OR_RETURN(int64_t released, store_->ReleaseLeases(replica_));
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
    spdlog::info(
        "replica {}: claiming jobs from the shared store ({} of its jobs to "
        "resume)",
        replica_, released);
    for (int i = 0; i < std::max(1, options_.workers); ++i) {
      workers_.emplace_back([this] { ClaimLoop(); });
    }
    lease_thread_ = std::thread([this] { LeaseLoop(); });
    sweep_thread_ = std::thread([this] { SweepLoop(); });
    listener_ = std::thread([this] {
      absl::Status s =
          store_->Listen([this](const std::string& id,
                                int64_t seq) { OnStoreChange(id, seq); },
                         stop_listening_);
      if (!s.ok()) spdlog::error("store listener: {}", s.ToString());
    });
    return absl::OkStatus();
  }
  SPARROW_ASSIGN_OR_RETURN(
      std::vector<JobRecord> jobs,
      store_->JobsInStates(
          {v1::Job::QUEUED, v1::Job::RUNNING, v1::Job::CANCELLING}));
  int resumed = 0, queued = 0, sweeps = 0;
  for (const JobRecord& r : jobs) {
    if (r.job.spec().has_sweep()) {  // its trials are jobs of their own
      NotifySweep(r.job.id());
      ++sweeps;
      continue;
    }
    SPARROW_RETURN_IF_ERROR(Recover(r, &resumed, &queued));
  }
  spdlog::info("recovered {} queued and {} running jobs, and {} sweeps", queued,
               resumed, sweeps);
  std::lock_guard<std::mutex> lock(mu_);
  started_ = true;
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
  sweep_thread_ = std::thread([this] { SweepLoop(); });
  UpdateGauges();
  return absl::OkStatus();
}

absl::Status JobManager::Recover(const JobRecord& r, int* resumed,
                                 int* queued) {
  const std::string& id = r.job.id();
  if (r.job.state() == v1::Job::CANCELLING) {
    return Transition(r.tenant, id,
                      {v1::Job::CANCELLED,
                       "cancelled: the server restarted while the job was "
                       "stopping",
                       "",
                       nullptr,
                       {v1::Job::CANCELLING}})
        .status();
  }
  // The limits may have changed since the job was accepted.
  auto memory = ValidateSubmission(r.tenant, r.job.spec());
  if (!memory.ok()) {
    const absl::StatusCode code = memory.status().code();
    if (code == absl::StatusCode::kUnavailable ||
        code == absl::StatusCode::kInternal ||
        code == absl::StatusCode::kDataLoss) {
      return memory.status();
    }
    return Transition(r.tenant, id,
                      {v1::Job::FAILED,
                       absl::StrCat("this server no longer accepts the job: ",
                                    memory.status().message()),
                       "",
                       nullptr,
                       {v1::Job::QUEUED, v1::Job::RUNNING}})
        .status();
  }
  std::lock_guard<std::mutex> lock(mu_);
  const bool resume = r.job.state() == v1::Job::RUNNING;
  *resumed += resume;
  *queued += !resume;
  Enqueue({resume, r.job.priority(), next_order_++, id, r.tenant, *memory});
  return absl::OkStatus();
}

void JobManager::Shutdown() {
  std::vector<std::thread> workers;
  std::thread sweeps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_ && workers_.empty()) return;
    draining_ = true;
    shutting_down_ = true;
    workers.swap(workers_);
    sweeps.swap(sweep_thread_);
  }
  {
    std::lock_guard<std::mutex> lock(sweep_mu_);
    sweep_stop_ = true;
  }
  sweep_cv_.notify_all();
  if (sweeps.joinable()) sweeps.join();
  if (shared_) ReleaseSweeps();
  cv_.notify_all();
  for (std::thread& t : workers) t.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    lease_stop_ = true;
  }
  lease_cv_.notify_all();
  stop_listening_ = true;
  if (lease_thread_.joinable()) lease_thread_.join();
  if (listener_.joinable()) listener_.join();
}

int JobManager::queue_depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(queue_.size());
}

int JobManager::running_jobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(running_.size());
}

void JobManager::Enqueue(QueueEntry entry) {
  const std::string id = entry.id;
  ++queued_per_tenant_[entry.tenant];
  queued_by_id_[id] = queue_.insert(std::move(entry)).first;
  cv_.notify_one();
}

void JobManager::UpdateGauges() {
  metrics_->SetQueueDepth(static_cast<double>(queue_.size()));
  metrics_->SetRunningJobs(static_cast<double>(running_.size()));
}

absl::StatusOr<v1::Job> JobManager::Transition(
    const std::string& tenant, const std::string& id,
    const JobTransition& transition) {
  SPARROW_ASSIGN_OR_RETURN(auto updated, store_->TransitionJob(id, transition));
  hub_->Publish(id, updated.second.seq());
  spdlog::info("job {} tenant {}: {} ({})", id, tenant,
               v1::Job::State_Name(transition.to), transition.reason);
  const v1::Job& job = updated.first;
  if (v1::IsFinal(job.state()) && !job.parent_id().empty()) {
    NotifySweep(job.parent_id());  // a trial has ended
  }
  if (v1::IsFinal(job.state()) && job.has_start_time()) {
    const absl::Time started =
        absl::FromUnixSeconds(job.start_time().seconds()) +
        absl::Nanoseconds(job.start_time().nanos());
    metrics_->ObserveJobEnd(Lower(job.state()),
                            absl::ToDoubleSeconds(absl::Now() - started));
  }
  return std::move(updated.first);
}

absl::StatusOr<v1::Job> JobManager::GetJob(const std::string& tenant,
                                           const std::string& id) {
  auto record = store_->GetJob(id);
  if (!record.ok() || record->tenant != tenant) {
    return absl::NotFoundError(
        absl::StrCat("job ", translate::ForMessage(id), " not found"));
  }
  if (record->job.spec().has_sweep()) {
    SPARROW_RETURN_IF_ERROR(DescribeSweep(tenant, &record->job));
  }
  return std::move(record->job);
}

absl::StatusOr<v1::TrainedModel> JobManager::GetModel(const std::string& tenant,
                                                      const std::string& id,
                                                      v1::Job* job) {
  SPARROW_ASSIGN_OR_RETURN(*job, GetJob(tenant, id));
  const v1::Job::State state = job->state();
  std::string name = Lower(state);
  if (state != v1::Job::SUCCEEDED && state != v1::Job::CANCELLED &&
      state != v1::Job::FAILED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " is ", name,
        "; it has a model once it has ended (watch it with: sparrow watch ", id,
        ")"));
  }
  auto model = store_->GetModel(id);
  if (state == v1::Job::SUCCEEDED ||
      model.status().code() != absl::StatusCode::kNotFound) {
    return model;
  }
  if (job->spec().has_sweep()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " is a sweep that ended ", name,
        " before choosing a trial, so it has no model of its own; its "
        "trials keep theirs (partial for a cancelled one): sparrow status ",
        id, " lists them, sparrow model get ", id, "-t0 downloads one (",
        job->reason(), ")"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "job ", id, " is ", name,
      " and kept no model: it ended before its first iteration finished, or "
      "its worker was stopped in the middle of one (",
      job->reason(), ")"));
}

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& tenant,
                                           const std::string& id) {
  SPARROW_ASSIGN_OR_RETURN(v1::Job job, GetJob(tenant, id));
  // States only move forward: a job that has ended stays ended. (Checked
  // before running_, which still holds a job for a moment after it ended.)
  if (v1::IsFinal(job.state())) return AlreadyEnded(id, job.state());
  if (job.spec().has_sweep()) {
    if (job.state() == v1::Job::CANCELLING) return job;
    auto cancelling = CancelSweep(tenant, job);
    if (cancelling.status().code() != absl::StatusCode::kFailedPrecondition) {
      return cancelling;
    }
    // Another cancel, or the sweep's end, came first.
    SPARROW_ASSIGN_OR_RETURN(job, GetJob(tenant, id));
    if (v1::IsFinal(job.state())) return AlreadyEnded(id, job.state());
    return job;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (queued_by_id_.count(id) > 0) return CancelQueued(tenant, id);
  auto running = running_.find(id);
  if (running != running_.end()) {
    return CancelRunning(tenant, id, running->second.get());
  }
  if (shared_) return CancelElsewhere(tenant, id);
  SPARROW_ASSIGN_OR_RETURN(job, GetJob(tenant, id));
  if (v1::IsFinal(job.state())) return AlreadyEnded(id, job.state());
  return job;  // CANCELLING, or between queue and worker: the worker sees it
}

absl::StatusOr<v1::Job> JobManager::CancelQueued(const std::string& tenant,
                                                 const std::string& id) {
  auto queued = queued_by_id_.find(id);
  // A job recovered at start-up waits here RUNNING in the store until a
  // worker resumes it. Leave the queue only once the store has the cancel.
  const bool resume = queued->second->resume;
  SPARROW_ASSIGN_OR_RETURN(
      v1::Job cancelled,
      Transition(tenant, id,
                 {v1::Job::CANCELLED,
                  resume ? "cancelled by the user before it resumed"
                         : "cancelled by the user before it started",
                  "",
                  nullptr,
                  {v1::Job::QUEUED, v1::Job::RUNNING}}));
  --queued_per_tenant_[queued->second->tenant];
  queue_.erase(queued->second);
  queued_by_id_.erase(queued);
  UpdateGauges();
  return cancelled;
}

absl::StatusOr<v1::Job> JobManager::CancelRunning(const std::string& tenant,
                                                  const std::string& id,
                                                  RunningJob* running) {
  if (running->cancel.load()) {  // already cancelling; it may have ended
    SPARROW_ASSIGN_OR_RETURN(v1::Job job, GetJob(tenant, id));
    if (v1::IsFinal(job.state())) return AlreadyEnded(id, job.state());
    return job;
  }
  // CANCELLING is stored before the worker can see the flag, so that it
  // always precedes the worker's CANCELLED; the worker hears of it at once.
  auto request_cancel = [&]() -> absl::StatusOr<v1::Job> {
    RunningJob& r = *running;
    std::lock_guard<std::mutex> stopping(r.mu);
    auto cancelling = Transition(tenant, id,
                                 {v1::Job::CANCELLING,
                                  "cancel requested by the user",
                                  "",
                                  nullptr,
                                  {v1::Job::RUNNING}});
    if (!cancelling.ok()) return cancelling;
    r.cancel = true;
    if (r.worker != nullptr) {
      v1::WorkerControl control;
      control.set_stop(v1::WorkerControl::CANCEL);
      r.worker->Send(control).IgnoreError();
    }
    return cancelling;
  };
  // States only move forward (QUEUED, RUNNING, CANCELLING or an end), so a
  // cancel that races the worker's RUNNING settles within two rounds.
  absl::Status refused;
  for (int round = 0; round < 3; ++round) {
    auto cancelling = request_cancel();
    if (cancelling.ok()) return cancelling;
    refused = cancelling.status();
    SPARROW_ASSIGN_OR_RETURN(v1::Job job, GetJob(tenant, id));
    if (v1::IsFinal(job.state())) return AlreadyEnded(id, job.state());
    if (job.state() == v1::Job::CANCELLING) return job;  // another cancel
    if (job.state() != v1::Job::QUEUED) continue;        // RUNNING meanwhile
    // A worker has taken the job but not recorded RUNNING yet: the cancel
    // is stored now (so that a crash cannot lose it), and the worker's
    // RUNNING is then refused.
    auto cancelled = Transition(tenant, id,
                                {v1::Job::CANCELLED,
                                 "cancelled by the user before it started",
                                 "",
                                 nullptr,
                                 {v1::Job::QUEUED}});
    if (cancelled.ok()) {
      running->cancel = true;
      return cancelled;
    }
    refused = cancelled.status();
  }
  return refused;
}

std::set<JobManager::QueueEntry>::iterator JobManager::NextRunnable(
    absl::Time now) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->not_before > now) continue;
    // A job alone may always run (Submit refused any over the budget).
    if (memory_in_use_ > 0 && memory_in_use_ + it->memory > memory_budget_) {
      continue;
    }
    return it;
  }
  return queue_.end();
}

void JobManager::WorkerLoop() {
  while (true) {
    QueueEntry entry;
    std::shared_ptr<RunningJob> running;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto next = queue_.end();
      while (!draining_ && (next = NextRunnable(absl::Now())) == queue_.end()) {
        absl::Time wake = absl::InfiniteFuture();
        for (const QueueEntry& e : queue_) {
          if (e.not_before > absl::Now()) wake = std::min(wake, e.not_before);
        }
        if (wake == absl::InfiniteFuture()) {
          cv_.wait(lock);
        } else {
          cv_.wait_for(lock, absl::ToChronoNanoseconds(wake - absl::Now()));
        }
      }
      if (draining_) return;
      entry = *next;
      queue_.erase(next);
      queued_by_id_.erase(entry.id);
      --queued_per_tenant_[entry.tenant];
      memory_in_use_ += entry.memory;
      running = std::make_shared<RunningJob>();
      running_[entry.id] = running;
      UpdateGauges();
    }
    RunJob(entry, running.get(), std::nullopt);
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(entry.id);
    memory_in_use_ -= entry.memory;
    UpdateGauges();
    cv_.notify_all();  // memory freed: a waiting job may fit now
  }
}

void JobManager::Requeue(QueueEntry entry, int store_failures) {
  if (shared_) {
    spdlog::warn(
        "job {} tenant {}: left to its lease, which expires within {}; then "
        "a replica resumes it from its checkpoint",
        entry.id, entry.tenant, absl::FormatDuration(options_.lease_expiry));
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) return;  // RUNNING in the store: resumes at the next start
  const absl::Duration pause = RetryPause(store_failures);
  spdlog::warn("job {} tenant {}: retrying in {} (store failure {})", entry.id,
               entry.tenant, absl::FormatDuration(pause), store_failures);
  store_failures_[entry.id] = store_failures;
  entry.resume = true;
  entry.not_before = absl::Now() + pause;
  Enqueue(std::move(entry));
  UpdateGauges();
}

absl::Status JobManager::Fail(const QueueEntry& entry,
                              const std::string& reason, int32_t fence,
                              const v1::TrainedModel* model) {
  JobTransition t{v1::Job::FAILED,
                  reason,
                  "",
                  model,
                  {v1::Job::RUNNING, v1::Job::CANCELLING}};
  t.fence = fence;
  return Transition(entry.tenant, entry.id, t).status();
}

}  // namespace sparrow::server
