#include "server/jobs/job_manager.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/data/csv.h"
#include "core/data/dataset.h"
#include "core/train/trainer.h"
#include "core/util/status_macros.h"
#include "server/jobs/worker_process.h"
#include "server/worker/worker.h"
#include "sparrow/v1/checkpoint.pb.h"
#include "sparrow/v1/worker.pb.h"
#include "spdlog/spdlog.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/legacy_spec_namespace.h"
#include "translate/text.h"

namespace sparrow::server {
namespace {

bool IsFinal(v1::Job::State s) {
  return s == v1::Job::SUCCEEDED || s == v1::Job::FAILED ||
         s == v1::Job::CANCELLED;
}

std::string NewJobId() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  return absl::StrFormat("job-%016x", rng());
}

std::string Lower(v1::Job::State s) {
  std::string name = v1::Job::State_Name(s);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return name;
}

// The job an earlier submission with the same request_id created, or
// ALREADY_EXISTS when the request differs (AIP-155).
absl::StatusOr<v1::Job> SameRequest(const v1::Job& earlier,
                                    const v1::SubmitJobRequest& request) {
  if (earlier.spec().SerializeAsString() !=
          request.spec().SerializeAsString() ||
      earlier.priority() != request.priority()) {
    return absl::AlreadyExistsError(absl::StrCat(
        "request_id '", spec::ForMessage(request.request_id()),
        "' was used for job ", earlier.id(),
        " with a different spec or priority; use a new request_id for a new "
        "job"));
  }
  return earlier;
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

int64_t PhysicalMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? int64_t{pages} * page : int64_t{8} << 30;
}

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
                                                   : options.worker_binary) {}

JobManager::~JobManager() { Shutdown(); }

absl::Status JobManager::Start() {
  if (worker_binary_.empty() || access(worker_binary_.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the worker program '", worker_binary_,
        "' cannot be run; jobs run in worker processes of sparrowd's own "
        "executable"));
  }
  SPARROW_ASSIGN_OR_RETURN(
      std::vector<JobRecord> jobs,
      store_->JobsInStates(
          {v1::Job::QUEUED, v1::Job::RUNNING, v1::Job::CANCELLING}));
  int resumed = 0, queued = 0;
  for (const JobRecord& r : jobs) {
    SPARROW_RETURN_IF_ERROR(Recover(r, &resumed, &queued));
  }
  spdlog::info("recovered {} queued and {} running jobs", queued, resumed);
  std::lock_guard<std::mutex> lock(mu_);
  started_ = true;
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_ && workers_.empty()) return;
    draining_ = true;
    shutting_down_ = true;
    workers.swap(workers_);
  }
  cv_.notify_all();
  for (std::thread& t : workers) t.join();
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
  if (IsFinal(job.state()) && job.has_start_time()) {
    const absl::Time started =
        absl::FromUnixSeconds(job.start_time().seconds()) +
        absl::Nanoseconds(job.start_time().nanos());
    metrics_->ObserveJobEnd(Lower(job.state()),
                            absl::ToDoubleSeconds(absl::Now() - started));
  }
  return std::move(updated.first);
}

absl::StatusOr<int64_t> JobManager::ValidateSubmission(
    const std::string& tenant, const v1::JobSpec& spec) {
  if (spec.data().source_case() != v1::DataSource::kDatasetId) {
    return absl::InvalidArgumentError(
        "spec.data.dataset_id is required: upload the CSV first (sparrow "
        "upload FILE.csv) and put its id here; data.csv_path is for local "
        "runs only");
  }
  SPARROW_ASSIGN_OR_RETURN(core::TrainConfig config, spec::ToTrainConfig(spec));
  SPARROW_ASSIGN_OR_RETURN(
      v1::Dataset dataset,
      store_->GetDataset(tenant, spec.data().dataset_id()));
  const std::vector<std::string> header(dataset.columns().begin(),
                                        dataset.columns().end());
  auto resolve = [&](const google::protobuf::RepeatedPtrField<std::string>& f,
                     const char* name) -> absl::StatusOr<int> {
    const std::vector<std::string> selectors(f.begin(), f.end());
    auto columns = core::data::ResolveColumns(header, selectors);
    if (!columns.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.data.", name, ": ", columns.status().message()));
    }
    return static_cast<int>(columns->size());
  };
  SPARROW_ASSIGN_OR_RETURN(int n_in, resolve(spec.data().inputs(), "inputs"));
  SPARROW_ASSIGN_OR_RETURN(int n_out,
                           resolve(spec.data().outputs(), "outputs"));
  SPARROW_RETURN_IF_ERROR(
      resolve(spec.data().test_inputs(), "test_inputs").status());
  SPARROW_RETURN_IF_ERROR(
      resolve(spec.data().test_outputs(), "test_outputs").status());
  if (!spec.data().trace_column().empty()) {
    SPARROW_RETURN_IF_ERROR(
        core::data::ResolveColumns(header, {spec.data().trace_column()})
            .status());
  }
  // Row ranges against the stored row count (the trainer re-checks them).
  const struct {
    const google::protobuf::RepeatedPtrField<v1::RowRange>* ranges;
    const char* name;
  } splits[] = {{&spec.split().train(), "spec.split.train"},
                {&spec.split().validation(), "spec.split.validation"},
                {&spec.split().test(), "spec.split.test"}};
  for (const auto& split : splits) {
    std::vector<core::data::RowRange> ranges;
    for (const v1::RowRange& r : *split.ranges) {
      ranges.push_back({r.first(), r.last()});
    }
    SPARROW_RETURN_IF_ERROR(
        core::data::ValidateRanges(ranges, dataset.rows(), split.name));
  }
  // Column roles, categorical columns and splits, as the trainer will check
  // them.
  SPARROW_RETURN_IF_ERROR(spec::ValidateDataSpec(spec, header, dataset.rows()));
  // A categorical column counts as one input or output here: its levels are
  // in the content, not the dataset's metadata. RunJob checks the limit again
  // with the one-hot widths.
  SPARROW_ASSIGN_OR_RETURN(int64_t params,
                           core::CountParameters(config.model, n_in, n_out));
  if (params > options_.limits.max_model_params) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the model has %d parameters; this server allows at most %d "
        "(sparrowd --max-model-params)",
        params, options_.limits.max_model_params));
  }
  SPARROW_ASSIGN_OR_RETURN(
      core::MemoryEstimate memory,
      core::EstimateMemory(config, n_in, n_out, dataset.rows(),
                           dataset.size_bytes()));
  SPARROW_RETURN_IF_ERROR(CheckMemory(memory));
  return memory.total;
}

absl::Status JobManager::CheckMemory(const core::MemoryEstimate& memory) const {
  const int64_t per_job = options_.limits.max_job_memory;
  if (memory.total <= per_job && memory.total <= memory_budget_) {
    return absl::OkStatus();
  }
  const bool job_limit = memory.total > per_job;
  return absl::ResourceExhaustedError(absl::StrCat(
      "the job would need about ", core::FormatBytes(memory.total),
      " of memory, mostly for ", memory.dominant, "; this server allows ",
      job_limit ? "one job at most " : "all running jobs together at most ",
      core::FormatBytes(job_limit ? per_job : memory_budget_),
      job_limit ? " (sparrowd --max-job-memory)"
                : " (sparrowd --max-total-job-memory)",
      ". Use a smaller model or less data",
      memory.curvature > memory.total / 2
          ? ", or a first-order method or L-BFGS, which need no n x n "
            "matrix"
          : ""));
}

absl::StatusOr<v1::Job> JobManager::Submit(
    const std::string& tenant, const v1::SubmitJobRequest& request) {
  if (shutting_down_) {
    return absl::UnavailableError(
        "the server is shutting down; retry after it restarts");
  }
  // A retry of an earlier submission returns that job, even when the queue
  // has filled up or the dataset is gone since.
  SPARROW_ASSIGN_OR_RETURN(
      std::optional<v1::Job> earlier,
      store_->FindJobByRequestId(tenant, request.request_id()));
  if (earlier.has_value()) return SameRequest(*earlier, request);
  SPARROW_ASSIGN_OR_RETURN(const int64_t memory,
                           ValidateSubmission(tenant, request.spec()));
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) {
    return absl::UnavailableError(
        "the server is shutting down; retry after it restarts");
  }
  if (static_cast<int>(queue_.size()) >= options_.limits.max_queued_jobs) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the queue is full: %d jobs wait (sparrowd --max-queued-jobs); retry "
        "later",
        queue_.size()));
  }
  if (queued_per_tenant_[tenant] >= options_.limits.max_queued_per_tenant) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "you have %d queued jobs, the most this server allows per tenant "
        "(sparrowd --max-queued-per-tenant); wait for some to start or cancel "
        "some",
        queued_per_tenant_[tenant]));
  }
  v1::Job job;
  job.set_id(NewJobId());
  *job.mutable_spec() = request.spec();
  job.set_priority(request.priority());
  job.set_request_id(request.request_id());
  bool existed = false;
  SPARROW_ASSIGN_OR_RETURN(v1::Job stored,
                           store_->CreateJob(tenant, job, &existed));
  if (existed) return SameRequest(stored, request);
  hub_->Publish(stored.id(), stored.last_seq());
  spdlog::info("job {} tenant {}: QUEUED (priority {})", stored.id(), tenant,
               stored.priority());
  Enqueue(
      {false, stored.priority(), next_order_++, stored.id(), tenant, memory});
  UpdateGauges();
  return stored;
}

absl::StatusOr<v1::Job> JobManager::GetJob(const std::string& tenant,
                                           const std::string& id) {
  auto record = store_->GetJob(id);
  if (!record.ok() || record->tenant != tenant) {
    return absl::NotFoundError(
        absl::StrCat("job ", spec::ForMessage(id), " not found"));
  }
  return std::move(record->job);
}

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& tenant,
                                           const std::string& id) {
  SPARROW_ASSIGN_OR_RETURN(v1::Job job, GetJob(tenant, id));
  // States only move forward: a job that has ended stays ended. (Checked
  // before running_, which still holds a job for a moment after it ended.)
  if (IsFinal(job.state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " already ", Lower(job.state()),
                     "; only queued or running jobs can be cancelled"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto queued = queued_by_id_.find(id);
  if (queued != queued_by_id_.end()) {
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
  auto running = running_.find(id);
  if (running != running_.end()) {
    if (running->second->cancel.load()) {
      return GetJob(tenant, id);  // already cancelling
    }
    // CANCELLING is stored before the worker can see the flag, so that it
    // always precedes the worker's CANCELLED; the worker hears of it at once.
    RunningJob& r = *running->second;
    std::unique_lock<std::mutex> stopping(r.mu);
    auto cancelling = Transition(tenant, id,
                                 {v1::Job::CANCELLING,
                                  "cancel requested by the user",
                                  "",
                                  nullptr,
                                  {v1::Job::RUNNING}});
    if (cancelling.ok()) {
      r.cancel = true;
      if (r.worker != nullptr) {
        v1::WorkerControl control;
        control.set_stop(v1::WorkerControl::CANCEL);
        r.worker->Send(control).IgnoreError();
      }
      return cancelling;
    }
    stopping.unlock();
    SPARROW_ASSIGN_OR_RETURN(job, GetJob(tenant, id));
    if (job.state() == v1::Job::QUEUED) {
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
        running->second->cancel = true;
        return cancelled;
      }
      SPARROW_ASSIGN_OR_RETURN(job, GetJob(tenant, id));
    }
    if (!IsFinal(job.state())) return cancelling.status();
  } else {
    SPARROW_ASSIGN_OR_RETURN(job, GetJob(tenant, id));
  }
  if (IsFinal(job.state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " already ", Lower(job.state()),
                     "; only queued or running jobs can be cancelled"));
  }
  return job;  // CANCELLING, or between queue and worker: the worker sees it
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
    RunJob(entry, running.get());
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(entry.id);
    memory_in_use_ -= entry.memory;
    UpdateGauges();
    cv_.notify_all();  // memory freed: a waiting job may fit now
  }
}

// One attempt of a job: spawns its worker process, sends it the job, stores
// and publishes what it reports, passes cancel and shutdown on to it (and
// kills it when it does not stop in time), and records how the job ended.
class JobManager::AttemptRunner {
 public:
  AttemptRunner(JobManager* manager, const QueueEntry& entry,
                RunningJob* running)
      : m_(manager), entry_(entry), running_(running) {}

  Attempt Run(const v1::Job& job) {
    if (absl::Status s = Launch(job); !s.ok()) {
      if (s.code() == absl::StatusCode::kNotFound) {
        return End(m_->Fail(entry_, std::string(s.message())));
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
          spdlog::error("job {}: the store failed: {}", entry_.id,
                        s.ToString());
          worker_->Kill();
          Release();
          worker_->Wait();
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
  enum class Kill { kNone, kCancel, kShutdown, kDeadline };

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
        *request.mutable_dataset(),
        m_->store_->GetDatasetContent(entry_.tenant,
                                      job.spec().data().dataset_id()));
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
        std::lock_guard<std::mutex> lock(running_->mu);
        SPARROW_ASSIGN_OR_RETURN(
            auto stored,
            m_->store_->AppendEvents(entry_.id, std::move(events)));
        m_->hub_->Publish(entry_.id, stored.back().seq());
        m_->metrics_->CountEvents(n);
        v1::WorkerControl ack;
        ack.set_events_stored(true);
        worker_->Send(ack).IgnoreError();  // a dead worker is seen by Next
        return absl::OkStatus();
      }
      case v1::WorkerReport::kCheckpoint:
        checkpoint_iteration_ = report->checkpoint().iteration();
        return m_->store_->PutCheckpoint(
            entry_.id, report->checkpoint().SerializeAsString());
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
    if ((cancel_sent_ || shutdown_sent_) && now - asked_ > o.stop_grace) {
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
            {v1::Job::CANCELLED,
             absl::StrCat("cancelled by the user at iteration ",
                          last_iteration_,
                          " (its worker was stopped in the middle of an "
                          "iteration)"),
             "",
             nullptr,
             {v1::Job::RUNNING, v1::Job::CANCELLING}}));
      case Kill::kDeadline:
        return End(m_->Fail(
            entry_, DeadlineReason(last_iteration_,
                                   m_->options_.limits.job_deadline_seconds)));
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
        return End(m_->Transition(
            entry_.tenant, entry_.id,
            {v1::Job::SUCCEEDED, o.reason(), o.summary(), &o.model(), from}));
      case Outcome::CANCELLED:
        return End(m_->Transition(
            entry_.tenant, entry_.id,
            {v1::Job::CANCELLED, o.reason(), "", nullptr, from}));
      case Outcome::STOPPED:
        spdlog::info(
            "job {} tenant {}: checkpointed at iteration {} for the restart",
            entry_.id, entry_.tenant, checkpoint_iteration_);
        return Attempt::kEnded;
      default:  // FAILED, DEADLINE
        return End(m_->Fail(entry_, o.reason()));
    }
  }

  // A final transition the store could not record: the job goes back to
  // the queue. One the job's state refused (it ended meanwhile) is logged.
  Attempt End(const absl::StatusOr<v1::Job>& job) { return End(job.status()); }
  Attempt End(const absl::Status& s) {
    if (s.ok()) return Attempt::kEnded;
    spdlog::error("job {}: {}", entry_.id, s.ToString());
    return s.code() == absl::StatusCode::kFailedPrecondition
               ? Attempt::kEnded
               : Attempt::kStoreFailed;
  }

  JobManager* m_;
  const QueueEntry& entry_;
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

void JobManager::RunJob(const QueueEntry& entry, RunningJob* running) {
  const std::string& id = entry.id;
  const std::string& tenant = entry.tenant;
  int store_failures = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = store_failures_.find(id);
    if (it != store_failures_.end()) store_failures = it->second;
  }
  auto job = Transition(tenant, id,
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
  while (true) {
    AttemptRunner attempt(this, entry, running);
    const Attempt ended = attempt.Run(*job);
    if (ended == Attempt::kStoreFailed)
      return Requeue(entry, store_failures + 1);
    if (ended == Attempt::kEnded) break;
    if (!RecordCrash(entry, attempt.death(), attempt.last_iteration())) break;
    if (shutting_down_) break;  // RUNNING: resumes at the next start
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

bool JobManager::RecordCrash(const QueueEntry& entry, const std::string& how,
                             int iteration) {
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
    if (s.status().code() != absl::StatusCode::kFailedPrecondition) {
      Requeue(entry, 1);
    }
    return false;
  }
  return t.to == v1::Job::RUNNING;
}

void JobManager::Requeue(QueueEntry entry, int store_failures) {
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
                              const std::string& reason) {
  return Transition(entry.tenant, entry.id,
                    {v1::Job::FAILED,
                     reason,
                     "",
                     nullptr,
                     {v1::Job::RUNNING, v1::Job::CANCELLING}})
      .status();
}

}  // namespace sparrow::server
