#include "server/jobs/job_manager.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/data/csv.h"
#include "core/data/dataset.h"
#include "core/train/trainer.h"
#include "core/util/status_macros.h"
#include "server/spec/convert.h"
#include "server/spec/text.h"
#include "sparrow/v1/checkpoint.pb.h"
#include "spdlog/spdlog.h"

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

// Optimizer iterations the spec asks for (epochs, or SBDL outer iterations).
int* IterationBudget(core::TrainConfig* config) {
  return config->optimizer == core::OptimizerKind::kSbdl
             ? &config->sbdl.outer_iterations
             : &config->max_epochs;
}

// What a checkpoint restores beyond the iterate: Adam's / SGD's moments and
// update count, NAILM's damping, B2LD's tolerance, BLInG's step. L-BFGS's
// memory, NAILS's line search, ADMM's duals and SBDL's hyperparameters start
// afresh (docs/service.md).
void ResumeOptimizer(const v1::JobCheckpoint& c, core::TrainConfig* config) {
  const double step = c.step_size();
  const bool positive = std::isfinite(step) && step > 0;
  switch (config->optimizer) {
    case core::OptimizerKind::kSgd:
    case core::OptimizerKind::kAdam:
      config->first_order.initial_state = Eigen::Map<const Eigen::VectorXd>(
          c.optimizer_state().data(), c.optimizer_state_size());
      break;
    case core::OptimizerKind::kNailm:
      if (positive &&
          config->penalty.kind == core::TrainConfig::Penalty::Kind::kNone) {
        config->gauss_newton.lambda0 = step;
      }
      break;
    case core::OptimizerKind::kB2ld:
      if (positive) config->b2ld.epsilon0 = step;
      break;
    case core::OptimizerKind::kBling:
      if (positive) config->bling.alpha0 = step;
      break;
    default:
      break;
  }
}

// Turns optimizer iterations into progress events (stored in batches, then
// published), takes checkpoints, and stops the run on cancel, shutdown or the
// deadline.
class JobCallback : public core::IterationCallback {
 public:
  enum class Stop { kNone, kCancel, kShutdown, kDeadline };

  JobCallback(Store* store, EventHub* hub, ServerMetrics* metrics,
              const std::string& job_id, const std::atomic<bool>* cancel,
              const std::atomic<bool>* shutdown, int iteration_offset,
              double elapsed_offset, const JobManagerOptions& options)
      : store_(store),
        hub_(hub),
        metrics_(metrics),
        job_id_(job_id),
        cancel_(cancel),
        shutdown_(shutdown),
        iteration_offset_(iteration_offset),
        elapsed_offset_(elapsed_offset),
        options_(options),
        start_(absl::Now()),
        last_flush_(start_),
        checkpoint_iteration_(iteration_offset) {}

  core::CallbackResult OnIteration(core::IterationRecord* r) override {
    const absl::Time now = absl::Now();
    // Thinning: an event within min_event_interval of the last stored one is
    // held back, replaced by the next, and stored at the end of the run.
    const bool keep = now - last_event_ >= options_.min_event_interval;
    if (keep) {
      last_event_ = now;
      has_held_ = false;
    }
    v1::ProgressEvent& e = keep ? pending_.emplace_back() : held_;
    if (!keep) {
      e.Clear();
      has_held_ = true;
    }
    e.set_kind(v1::ProgressEvent::ITERATION);
    last_iteration_ = iteration_offset_ + r->iteration;
    e.set_iteration(last_iteration_);
    last_elapsed_ = elapsed_offset_ + r->elapsed_seconds;
    e.set_elapsed_seconds(last_elapsed_);
    e.set_loss(r->loss);
    if (std::isfinite(r->validation_metric))
      e.set_validation_metric(r->validation_metric);
    if (std::isfinite(r->sparsity_pct)) e.set_sparsity_pct(r->sparsity_pct);
    if (std::isfinite(r->step_size)) e.set_step_size(r->step_size);
    for (const auto& [name, value] : r->extras) {
      if (std::isfinite(value)) (*e.mutable_extras())[name] = value;
    }
    if (r->params != nullptr) {
      last_params_ = *r->params;  // same size after the first: no allocation
    }
    if (r->optimizer_state != nullptr) last_state_ = *r->optimizer_state;
    last_step_ = r->step_size;
    // Progress may be reported every few iterations (stopping.report_every):
    // checkpoint at the first report at least checkpoint_every past the last
    // (and at least checkpoint_min_interval after it).
    const bool checkpoint =
        options_.checkpoint_every > 0 &&
        last_iteration_ - checkpoint_iteration_ >= options_.checkpoint_every &&
        now - last_checkpoint_ >= options_.checkpoint_min_interval;
    if (checkpoint || now - last_flush_ >= options_.event_flush_interval) {
      if (!Flush().ok()) return core::CallbackResult::kAbort;
      if (checkpoint && !Checkpoint().ok()) return core::CallbackResult::kAbort;
    }
    if (cancel_->load()) {
      stop_ = Stop::kCancel;
    } else if (shutdown_->load()) {
      stop_ = Stop::kShutdown;
    } else if (options_.limits.job_deadline_seconds > 0 &&
               absl::ToDoubleSeconds(now - start_) >
                   options_.limits.job_deadline_seconds) {
      stop_ = Stop::kDeadline;
    }
    return stop_ == Stop::kNone ? core::CallbackResult::kContinue
                                : core::CallbackResult::kAbort;
  }

  // At the end of the run: the held-back last iteration is stored too.
  absl::Status FlushFinal() {
    if (has_held_) {
      pending_.push_back(held_);
      has_held_ = false;
    }
    return Flush();
  }

  // Stores the pending events in one transaction, then publishes them.
  absl::Status Flush() {
    last_flush_ = absl::Now();
    if (pending_.empty()) return store_error_;
    const double n = static_cast<double>(pending_.size());
    auto stored = store_->AppendEvents(job_id_, std::move(pending_));
    pending_.clear();
    if (!stored.ok()) {
      store_error_ = stored.status();
      return store_error_;
    }
    hub_->Publish(job_id_, stored->back().seq());
    metrics_->CountEvents(n);
    return absl::OkStatus();
  }

  absl::Status Checkpoint() {
    if (last_params_.size() == 0) return absl::OkStatus();
    checkpoint_iteration_ = last_iteration_;
    last_checkpoint_ = absl::Now();
    v1::JobCheckpoint c;
    c.set_iteration(last_iteration_);
    c.set_elapsed_seconds(last_elapsed_);
    c.mutable_params()->Add(last_params_.data(),
                            last_params_.data() + last_params_.size());
    c.mutable_optimizer_state()->Add(last_state_.data(),
                                     last_state_.data() + last_state_.size());
    if (std::isfinite(last_step_)) c.set_step_size(last_step_);
    absl::Status s = store_->PutCheckpoint(job_id_, c.SerializeAsString());
    if (!s.ok()) store_error_ = s;
    return s;
  }

  Stop stop() const { return stop_; }
  int last_iteration() const { return last_iteration_; }
  const absl::Status& store_error() const { return store_error_; }

 private:
  Store* store_;
  EventHub* hub_;
  ServerMetrics* metrics_;
  const std::string job_id_;
  const std::atomic<bool>* cancel_;
  const std::atomic<bool>* shutdown_;
  const int iteration_offset_;
  const double elapsed_offset_;
  const JobManagerOptions& options_;
  const absl::Time start_;
  absl::Time last_flush_;
  absl::Time last_checkpoint_ = absl::InfinitePast();
  absl::Time last_event_ = absl::InfinitePast();
  v1::ProgressEvent held_;  // the newest thinned-out event
  bool has_held_ = false;
  std::vector<v1::ProgressEvent> pending_;
  Eigen::VectorXd last_params_;
  Eigen::VectorXd last_state_;
  double last_step_ = std::numeric_limits<double>::quiet_NaN();
  int last_iteration_ = 0;
  int checkpoint_iteration_;  // of the last checkpoint
  double last_elapsed_ = 0.0;
  Stop stop_ = Stop::kNone;
  absl::Status store_error_;
};

}  // namespace

JobManager::JobManager(Store* store, EventHub* hub, ServerMetrics* metrics,
                       JobManagerOptions options)
    : store_(store), hub_(hub), metrics_(metrics), options_(options) {}

JobManager::~JobManager() { Shutdown(); }

absl::Status JobManager::Start() {
  SPARROW_ASSIGN_OR_RETURN(
      std::vector<JobRecord> jobs,
      store_->JobsInStates(
          {v1::Job::QUEUED, v1::Job::RUNNING, v1::Job::CANCELLING}));
  int resumed = 0, queued = 0;
  for (const JobRecord& r : jobs) {
    if (r.job.state() == v1::Job::CANCELLING) {
      SPARROW_RETURN_IF_ERROR(
          Transition(r.tenant, r.job.id(),
                     {v1::Job::CANCELLED,
                      "cancelled: the server restarted while the job was "
                      "stopping",
                      "",
                      nullptr,
                      {v1::Job::CANCELLING}})
              .status());
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    const bool resume = r.job.state() == v1::Job::RUNNING;
    resumed += resume;
    queued += !resume;
    Enqueue({resume, r.job.priority(), next_order_++, r.job.id(), r.tenant});
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
  return std::move(updated.first);
}

absl::Status JobManager::ValidateSubmission(const std::string& tenant,
                                            const v1::JobSpec& spec) {
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
  return absl::OkStatus();
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
  SPARROW_RETURN_IF_ERROR(ValidateSubmission(tenant, request.spec()));
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
  Enqueue({false, stored.priority(), next_order_++, stored.id(), tenant});
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
    // always precedes the worker's CANCELLED.
    auto cancelling = Transition(tenant, id,
                                 {v1::Job::CANCELLING,
                                  "cancel requested by the user",
                                  "",
                                  nullptr,
                                  {v1::Job::RUNNING}});
    if (cancelling.ok()) {
      running->second->cancel = true;
      return cancelling;
    }
    SPARROW_ASSIGN_OR_RETURN(job, GetJob(tenant, id));
    if (job.state() == v1::Job::QUEUED) {
      // A worker has taken the job but not recorded RUNNING yet: it stops at
      // its first iteration (RUNNING, then CANCELLED).
      running->second->cancel = true;
      return job;
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

void JobManager::WorkerLoop() {
  while (true) {
    QueueEntry entry;
    std::shared_ptr<RunningJob> running;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return draining_ || !queue_.empty(); });
      if (draining_) return;
      entry = *queue_.begin();
      queue_.erase(queue_.begin());
      queued_by_id_.erase(entry.id);
      --queued_per_tenant_[entry.tenant];
      running = std::make_shared<RunningJob>();
      running_[entry.id] = running;
      UpdateGauges();
    }
    RunJob(entry, running.get());
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(entry.id);
    UpdateGauges();
  }
}

void JobManager::RunJob(const QueueEntry& entry, RunningJob* running) {
  const absl::Time start = absl::Now();
  const std::string& id = entry.id;
  const std::string& tenant = entry.tenant;
  auto fail = [&](const std::string& reason) {
    auto s = Transition(tenant, id,
                        {v1::Job::FAILED,
                         reason,
                         "",
                         nullptr,
                         {v1::Job::RUNNING, v1::Job::CANCELLING}});
    if (!s.ok()) spdlog::error("job {}: {}", id, s.status().ToString());
    metrics_->ObserveJobEnd("failed",
                            absl::ToDoubleSeconds(absl::Now() - start));
  };

  // The checkpoint of an interrupted attempt, if any.
  v1::JobCheckpoint checkpoint;
  bool resume = false;
  if (entry.resume) {
    auto bytes = store_->GetCheckpoint(id);
    if (bytes.ok() && bytes->has_value() &&
        checkpoint.ParseFromString(**bytes)) {
      resume = true;
    }
  }
  std::string reason = "started";
  if (entry.resume) {
    reason = resume ? absl::StrCat(
                          "resumed after a restart from the "
                          "checkpoint at iteration ",
                          checkpoint.iteration())
                    : "restarted from the beginning after a restart (no "
                      "checkpoint yet)";
  }
  auto job = Transition(tenant, id,
                        {v1::Job::RUNNING,
                         reason,
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
    if (!s.ok()) spdlog::error("job {}: {}", id, s.status().ToString());
    return;
  }
  if (!job.ok()) {
    spdlog::error("job {}: cannot start: {}", id, job.status().ToString());
    return;
  }
  const v1::JobSpec& spec = job->spec();
  auto config = spec::ToTrainConfig(spec);
  if (!config.ok()) return fail(std::string(config.status().message()));
  auto csv = store_->GetDatasetContent(tenant, spec.data().dataset_id());
  if (!csv.ok()) return fail(std::string(csv.status().message()));
  spec::DataSummary summary;
  auto data = spec::LoadTrainData(spec, *config, *csv, &summary);
  if (!data.ok()) return fail(std::string(data.status().message()));
  csv->clear();
  csv->shrink_to_fit();
  if (summary.dropped_rows > 0) {
    spdlog::info("job {} tenant {}: dropped {} of {} rows with missing values",
                 id, tenant, summary.dropped_rows, summary.file_rows);
  }
  // Submission counted each categorical column as one input or output; only
  // the data knows how many levels they one-hot encode into.
  if (!spec.data().categorical().empty()) {
    auto params =
        core::CountParameters(config->model, summary.inputs, summary.outputs);
    if (params.ok() && *params > options_.limits.max_model_params) {
      return fail(absl::StrFormat(
          "with its categorical columns one-hot encoded into %d input and %d "
          "output columns the model has %d parameters; this server allows at "
          "most %d (sparrowd --max-model-params)",
          summary.inputs, summary.outputs, *params,
          options_.limits.max_model_params));
    }
  }

  int offset = 0;
  double elapsed = 0.0;
  if (resume) {
    offset = checkpoint.iteration();
    elapsed = checkpoint.elapsed_seconds();
    config->initial_params = Eigen::Map<const Eigen::VectorXd>(
        checkpoint.params().data(), checkpoint.params_size());
    int* budget = IterationBudget(&*config);
    *budget = std::max(1, *budget - offset);
    ResumeOptimizer(checkpoint, &*config);
    // The wall-clock budget (stopping.max_seconds) covers every attempt.
    if (config->max_seconds > 0) {
      config->max_seconds = std::max(1e-3, config->max_seconds - elapsed);
    }
  }
  JobCallback callback(store_, hub_, metrics_, id, &running->cancel,
                       &shutting_down_, offset, elapsed, options_);
  auto result = core::Train(*config, *data, &callback);
  const absl::Status flushed = callback.FlushFinal();
  if (!flushed.ok()) {
    // The store failed under us: leave the job RUNNING so that the next
    // start resumes it, rather than claim an outcome we could not record.
    spdlog::error("job {}: the store failed: {}", id, flushed.ToString());
    return;
  }
  switch (callback.stop()) {
    case JobCallback::Stop::kShutdown: {
      const absl::Status s = callback.Checkpoint();
      spdlog::info(
          "job {} tenant {}: checkpointed at iteration {} for the "
          "restart{}",
          id, tenant, callback.last_iteration(),
          s.ok() ? "" : absl::StrCat(" (failed: ", s.message(), ")"));
      return;
    }
    case JobCallback::Stop::kCancel: {
      auto s = Transition(tenant, id,
                          {v1::Job::CANCELLED,
                           absl::StrCat("cancelled by the user at iteration ",
                                        callback.last_iteration()),
                           "",
                           nullptr,
                           {v1::Job::RUNNING, v1::Job::CANCELLING}});
      if (!s.ok()) spdlog::error("job {}: {}", id, s.status().ToString());
      metrics_->ObserveJobEnd("cancelled",
                              absl::ToDoubleSeconds(absl::Now() - start));
      return;
    }
    case JobCallback::Stop::kDeadline:
      return fail(absl::StrFormat(
          "stopped at iteration %d: the job ran longer than the per-job "
          "deadline of %g s (sparrowd --job-deadline)",
          callback.last_iteration(), options_.limits.job_deadline_seconds));
    case JobCallback::Stop::kNone:
      break;
  }
  if (!result.ok()) return fail(std::string(result.status().message()));
  // A resumed attempt trained only the iterations after the checkpoint: the
  // model and the summary count the whole run.
  result->summary.iterations += offset;
  result->summary.seconds += elapsed;
  result->train_seconds += elapsed;
  if (result->summary.termination == core::Termination::kDiverged) {
    std::string reason = result->summary.message.empty()
                             ? result->summary.BriefReport()
                             : result->summary.message;
    if (reason.find("try ") == std::string::npos) {
      absl::StrAppend(&reason,
                      "; try a smaller learning rate or stronger "
                      "regularization");
    }
    return fail(reason);
  }
  v1::TrainedModel model = spec::ToProto(spec, *result);
  model.set_seed(config->seed);
  auto done = Transition(tenant, id,
                         {v1::Job::SUCCEEDED,
                          "finished",
                          result->summary.BriefReport(),
                          &model,
                          {v1::Job::RUNNING, v1::Job::CANCELLING}});
  if (!done.ok()) spdlog::error("job {}: {}", id, done.status().ToString());
  metrics_->ObserveJobEnd("succeeded",
                          absl::ToDoubleSeconds(absl::Now() - start));
}

}  // namespace sparrow::server
