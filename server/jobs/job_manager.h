// The job queue and its workers: admission (validation, limits, idempotent
// submission, the memory a job will need), priority order, cancellation,
// progress events (stored in batches, then published to watchers),
// checkpoints, and recovery at start-up. Each job runs in a worker process
// (WorkerProcess) under a memory limit, so that a job that crashes or runs
// out of memory ends only itself. The services are thin wrappers over this
// class and the Store. Its member functions are defined in job_manager.cc
// (the queue, recovery, cancellation), job_admission.cc (Submit) and
// job_attempt.cc (running a job, attempt by attempt) and job_sweeps.cc
// (sweep jobs, whose trials are jobs of their own).
#ifndef SPARROW_SERVER_JOBS_JOB_MANAGER_H_
#define SPARROW_SERVER_JOBS_JOB_MANAGER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/train/memory.h"
#include "server/jobs/event_hub.h"
#include "server/jobs/worker_process.h"
#include "server/metrics.h"
#include "server/store/store.h"
#include "sparrow/v1/jobs.pb.h"
#include "translate/sweep.h"

namespace sparrow::server {

// Server-wide limits. Exceeding one is RESOURCE_EXHAUSTED naming the flag.
struct Limits {
  int64_t max_upload_bytes = int64_t{256} << 20;  // --max-upload-bytes
  int max_message_bytes = 64 << 20;               // --max-message-bytes
  int max_queued_jobs = 10000;                    // --max-queued-jobs
  int max_queued_per_tenant = 5000;               // --max-queued-per-tenant
  int64_t max_model_params = 50'000'000;          // --max-model-params
  double job_deadline_seconds = 86400;            // --job-deadline; 0 = none
  // The memory one job may use (estimated at submission, enforced on its
  // worker process) and all running jobs together (0 = 3/4 of the
  // machine's physical memory); a job waits in the queue until it fits.
  int64_t max_job_memory = int64_t{4} << 30;  // --max-job-memory
  int64_t max_total_job_memory = 0;           // --max-total-job-memory
};

struct JobManagerOptions {
  int workers = 1;
  // Iterations between checkpoints of a running job (and at shutdown); 0 =
  // only at shutdown.
  int checkpoint_every = 50;
  // ... but at most this often: a job with millisecond iterations would
  // otherwise spend its time in fsync. 0 = every checkpoint_every iterations.
  absl::Duration checkpoint_min_interval = absl::Seconds(1);
  // Iteration events closer together than this are thinned out (the last
  // one before a stored event, and the last of the run, are kept), so that a
  // fast optimizer cannot flood the store and the watchers. 0 = keep all.
  absl::Duration min_event_interval = absl::ZeroDuration();
  // Progress events are stored (and then published) in batches at most this
  // far apart, so that a fast optimizer does not pay one fsync per epoch.
  absl::Duration event_flush_interval = absl::Milliseconds(100);
  Limits limits;
  // The program run as `BINARY --sparrow-worker PID` for each job attempt
  // (server/worker/worker.h); empty = this process's own executable.
  std::string worker_binary;
  // After a cancel, a shutdown or the deadline, a worker that has not stopped
  // within this time (an epoch in progress) is killed; a shutdown still has
  // the checkpoint of its last finished iteration.
  absl::Duration stop_grace = absl::Seconds(2);
  // A job whose worker process dies this many times (a crash, or the
  // kernel's OOM killer) is FAILED instead of resumed again.
  int max_worker_crashes = 3;
  // Test hook: the memory limit put on worker processes when not 0 (the
  // admission check still uses limits.max_job_memory).
  int64_t worker_memory_limit_override = 0;

  // Replicas. On a store that several sparrowds share (Store::shared) the
  // store is the queue: each replica claims the jobs its workers run and
  // renews a lease on each every lease_renew; a job whose lease is older
  // than lease_expiry is taken over by another replica (job_claims.cc).
  std::string replica_name;  // empty = "<host name>-<pid>"
  absl::Duration lease_renew = absl::Seconds(5);
  absl::Duration lease_expiry = absl::Seconds(30);
  // An idle worker looks for work this often, besides when another replica
  // tells it of a new job (a NOTIFY, which a reconnect can miss); expired
  // leases are found this way.
  absl::Duration claim_poll = absl::Seconds(1);
};

class JobManager {
 public:
  // store, hub and metrics must outlive the manager.
  JobManager(Store* store, EventHub* hub, ServerMetrics* metrics,
             JobManagerOptions options);
  ~JobManager();
  JobManager(const JobManager&) = delete;
  JobManager& operator=(const JobManager&) = delete;

  // Recovery, then the workers: QUEUED jobs are queued again, RUNNING ones
  // resume first (from their last checkpoint), CANCELLING ones are CANCELLED.
  // On a shared store there is nothing to recover: the workers claim jobs,
  // a thread renews their leases and one listens to the other replicas.
  absl::Status Start();

  // Validates the spec against the tenant's dataset and the limits, then
  // stores the job as QUEUED. A request_id seen before returns that job
  // (ALREADY_EXISTS when the spec or priority differ).
  absl::StatusOr<v1::Job> Submit(const std::string& tenant,
                                 const v1::SubmitJobRequest& request);
  // A queued job is CANCELLED at once; a running one becomes CANCELLING and
  // its optimizer stops within one iteration. FAILED_PRECONDITION for a
  // finished job; another tenant's job is NOT_FOUND.
  absl::StatusOr<v1::Job> Cancel(const std::string& tenant,
                                 const std::string& id);
  // A job of the tenant (NOT_FOUND otherwise, also for another tenant's);
  // a sweep job with its trials (Job.trials, Job.chosen_trial).
  absl::StatusOr<v1::Job> GetJob(const std::string& tenant,
                                 const std::string& id);
  // The model of an ended job, with the job in *job: a succeeded job's, or
  // the one a cancelled or failed job had reached (TrainedModel.partial).
  // FAILED_PRECONDITION for a job still queued or running, or one that ended
  // before it had a model.
  absl::StatusOr<v1::TrainedModel> GetModel(const std::string& tenant,
                                            const std::string& id,
                                            v1::Job* job);

  // Graceful stop: Submit answers UNAVAILABLE; running jobs checkpoint at
  // their next iteration and stay RUNNING in the store, to resume at the next
  // Start; the workers are joined. Idempotent.
  void Shutdown();

  int queue_depth() const;
  int running_jobs() const;
  // This replica's name (Job.replica of the jobs it runs).
  const std::string& replica() const { return replica_; }

 private:
  struct QueueEntry {
    bool resume = false;  // recovered RUNNING jobs go first
    int32_t priority = 0;
    uint64_t order = 0;  // submission order
    std::string id;
    std::string tenant;
    int64_t memory = 0;  // the estimate, in bytes
    // Not run before this time (a retry after a store failure).
    absl::Time not_before = absl::InfinitePast();
    bool operator<(const QueueEntry& o) const {
      return std::make_tuple(!resume, -static_cast<int64_t>(priority), order) <
             std::make_tuple(!o.resume, -static_cast<int64_t>(o.priority),
                             o.order);
    }
  };
  struct RunningJob {
    std::atomic<bool> cancel{false};
    // Held while a batch of events is stored and acknowledged, and while a
    // cancel is stored and sent: a worker told to cancel has at most one
    // batch of events stored after CANCELLING.
    std::mutex mu;
    WorkerProcess* worker = nullptr;  // of the current attempt, under mu
    // The attempt's number, the fence of its writes (0 until it runs).
    std::atomic<int32_t> fence{0};
    // Another replica has taken the job over: the worker is stopped.
    std::atomic<bool> lost{false};
    // A sweep job this replica follows on a shared store: no worker runs
    // it; its lease is renewed like a job's.
    bool sweep = false;
  };
  // How one attempt of a job (one worker process) ended; kLost: another
  // replica took the job over.
  enum class Attempt { kEnded, kCrashed, kStoreFailed, kLost };
  class AttemptRunner;

  void WorkerLoop();
  // ---- replicas (job_claims.cc) ----
  // A worker on a shared store: claims a job, runs it, claims the next.
  void ClaimLoop();
  // Claims the next job that fits in the memory left (mu_ not held); empty
  // when there is none, or on a store error (logged).
  std::optional<ClaimedJob> Claim();
  // Renews the leases of the running jobs every lease_renew (sooner when
  // another replica changed one of them), stops the jobs this replica lost
  // and passes on cancels sent to other replicas.
  void LeaseLoop();
  void Renew(const std::string& id, RunningJob* running);
  // The store's listener: another replica stored events of a job.
  void OnStoreChange(const std::string& job_id, int64_t seq);
  // Cancel of a job no worker of this replica runs, on a shared store.
  absl::StatusOr<v1::Job> CancelElsewhere(const std::string& tenant,
                                          const std::string& id);
  // Submit's queue limits, from the store when it is shared (mu_ held).
  absl::Status CheckQueueLimits(const std::string& tenant);
  // The first queued job that may start now and fits in the memory budget
  // (mu_ held); queue_.end() if none.
  std::set<QueueEntry>::iterator NextRunnable(absl::Time now);
  // Runs a job (claimed: its RUNNING transition is stored already).
  void RunJob(const QueueEntry& entry, RunningJob* running,
              std::optional<v1::Job> claimed);
  // Records a crashed attempt: RUNNING again for the next attempt (true), or
  // FAILED after max_worker_crashes (false).
  bool RecordCrash(const QueueEntry& entry, RunningJob* running,
                   const std::string& how, int iteration);
  // Puts a job whose attempt could not be recorded back in the queue, to
  // resume after a growing pause.
  void Requeue(QueueEntry entry, int store_failures);
  // Stores the FAILED transition of attempt `fence`, with the model the run
  // reached when there is one (the store's error, if any).
  absl::Status Fail(const QueueEntry& entry, const std::string& reason,
                    int32_t fence, const v1::TrainedModel* model = nullptr);
  // The reason of the RUNNING transition that starts an attempt.
  std::string StartReason(const QueueEntry& entry, int store_failures);
  // Stores a transition, publishes its event and logs it.
  absl::StatusOr<v1::Job> Transition(const std::string& tenant,
                                     const std::string& id,
                                     const JobTransition& transition);
  // The checks of Submit that need the store; returns the memory the job
  // will need (RESOURCE_EXHAUSTED over --max-job-memory).
  absl::StatusOr<int64_t> ValidateSubmission(const std::string& tenant,
                                             const v1::JobSpec& spec);
  // Resolves spec.warm_start (a job id against this tenant's ended jobs) and
  // checks that its model can start this spec.
  absl::Status CheckWarmStart(const std::string& tenant,
                              const v1::JobSpec& spec, int n_inputs,
                              core::TrainConfig* config);
  absl::Status CheckMemory(const core::MemoryEstimate& estimate) const;
  // Start(): queues or resumes a recovered job, or fails one that no longer
  // passes the limits.
  absl::Status Recover(const JobRecord& record, int* resumed, int* queued);
  // The two halves of Cancel, mu_ held: a job in the queue_ (it leaves it),
  // and a job a worker thread has taken.
  absl::StatusOr<v1::Job> CancelQueued(const std::string& tenant,
                                       const std::string& id);
  absl::StatusOr<v1::Job> CancelRunning(const std::string& tenant,
                                        const std::string& id,
                                        RunningJob* running);
  // ---- sweeps (job_sweeps.cc) ----
  // A sweep job is never run by a worker: the sweep thread creates its
  // trials as jobs of their own (Job.parent_id), at most as many unfinished
  // at once as there are workers (or sweep.max_parallel), each warm-started
  // path point once the point before it has ended; when all have ended it
  // chooses one (translate::ChooseTrial) and ends with its model. Every step
  // is idempotent (a trial's request_id is derived from the sweep's), so
  // that after a restart the thread simply goes on.
  //
  // Submit's checks of a sweep: every trial's, the trials' memory.
  absl::StatusOr<int64_t> ValidateSweep(const std::string& tenant,
                                        const v1::JobSpec& spec);
  // Asks the sweep thread to look at the sweep job `id` again.
  void NotifySweep(const std::string& id);
  void SweepLoop();
  // One look at a sweep: starts the trials that may start, passes a cancel
  // on, or ends the sweep. An error is retried: RESOURCE_EXHAUSTED when the
  // queue is full, FAILED_PRECONDITION when the sweep changed meanwhile,
  // else the store's.
  absl::Status AdvanceSweep(const std::string& id);
  // The sweep's trials that may start now, and the cancel of its trials.
  absl::Status StartTrials(const std::string& tenant, const v1::Job& parent,
                           const std::vector<translate::Trial>& trials,
                           const std::vector<std::optional<v1::Job>>& jobs);
  absl::Status CancelTrials(const std::string& tenant,
                            const std::vector<std::optional<v1::Job>>& jobs);
  // Creates a trial's job (idempotent) and queues it, or fails it when it
  // cannot run. `before`: the ended path point it starts from, or null.
  absl::Status StartTrial(const std::string& tenant, const v1::Job& parent,
                          const translate::Trial& trial, const v1::Job* before);
  // Queues a trial's stored QUEUED job, or fails it (not_run set); a job a
  // worker already has, or the queue holds, is left alone.
  absl::Status QueueTrial(const std::string& tenant, const v1::Job& job,
                          int64_t memory, const std::string& not_run);
  // The memory a trial needs, or why it cannot run (*not_run); an error is
  // the store's.
  absl::StatusOr<int64_t> TrialAdmission(const std::string& tenant,
                                         const v1::JobSpec& spec,
                                         const v1::Job* before,
                                         std::string* not_run);
  // The trials' jobs of a sweep, by trial index (nullopt: not created yet).
  absl::StatusOr<std::vector<std::optional<v1::Job>>> TrialJobs(
      const std::string& tenant, const v1::Job& parent, int trials);
  // On a shared store: a claimed sweep job is followed here, under a lease
  // like a job's, until it ends (ForgetSweep) or this replica stops
  // (ReleaseSweeps hands it to another replica at once).
  void AdoptSweep(const ClaimedJob& claimed);
  void ForgetSweep(const std::string& id);
  void ReleaseSweeps();
  // The sweep whose trial `job_id` is ("<sweep id>-t<index>"), if this
  // replica follows it; mu_ held.
  std::string OwnSweepOf(const std::string& job_id) const;
  // Fills Job.trials and Job.chosen_trial of a sweep job.
  absl::Status DescribeSweep(const std::string& tenant, v1::Job* job);
  // Cancel of a sweep job: CANCELLING, then the sweep thread cancels the
  // trials and ends it.
  absl::StatusOr<v1::Job> CancelSweep(const std::string& tenant,
                                      const v1::Job& job);
  // Appends a TRIAL_END event to the sweep's log for each ended trial that
  // has none yet (parent.trial_ends), in trial order.
  absl::Status AnnounceTrialEnds(
      const v1::Job& parent, const std::vector<std::optional<v1::Job>>& jobs);
  // Copies a trial's stored iteration events into its sweep job's log,
  // tagged with the trial (ProgressEvent.trial).
  void MirrorEvents(const v1::Job& trial,
                    const std::vector<v1::ProgressEvent>& events);

  void Enqueue(QueueEntry entry);  // mu_ held
  void UpdateGauges();             // mu_ held

  Store* store_;
  EventHub* hub_;
  ServerMetrics* metrics_;
  const JobManagerOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<QueueEntry> queue_;
  std::map<std::string, std::set<QueueEntry>::iterator> queued_by_id_;
  std::map<std::string, int> queued_per_tenant_;
  std::map<std::string, std::shared_ptr<RunningJob>> running_;
  std::map<std::string, int> store_failures_;  // by job id, while retried
  int64_t memory_in_use_ = 0;                  // estimates of the running jobs
  int64_t memory_budget_ = 0;  // limits.max_total_job_memory, resolved
  std::string worker_binary_;
  uint64_t next_order_ = 0;
  bool started_ = false;
  bool draining_ = false;
  std::atomic<bool> shutting_down_{false};
  std::vector<std::thread> workers_;

  // Replicas.
  const bool shared_;
  const std::string replica_;
  std::condition_variable lease_cv_;
  bool lease_check_ = false;  // under mu_: renew now
  bool lease_stop_ = false;   // under mu_
  std::thread lease_thread_;
  std::atomic<bool> stop_listening_{false};
  std::thread listener_;

  // Sweeps.
  std::mutex sweep_mu_;  // taken after mu_, never before
  std::condition_variable sweep_cv_;
  // Under sweep_mu_: the sweeps to look at, first come first served (the
  // set keeps each once), and those to look at again later.
  std::deque<std::string> sweep_queue_;
  std::set<std::string> sweeps_due_;
  std::map<std::string, absl::Time> sweep_retry_;
  bool sweep_stop_ = false;
  std::thread sweep_thread_;
};

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_JOBS_JOB_MANAGER_H_
