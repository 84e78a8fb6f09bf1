// The Store: everything sparrowd must not lose — datasets, jobs with their
// state history, progress events, checkpoints and trained models. Every write
// is durable (committed and synced) when the call returns, so whatever the
// service acknowledges survives a crash. Implementations are thread-safe.
//
// Tenancy: datasets are keyed by (tenant, id); jobs and everything hanging off
// them are keyed by job id and carry their tenant, which the services check.
#ifndef SPARROW_SERVER_STORE_STORE_H_
#define SPARROW_SERVER_STORE_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "sparrow/v1/datasets.pb.h"
#include "sparrow/v1/jobs.pb.h"
#include "sparrow/v1/model.pb.h"
#include "sparrow/v1/series.pb.h"

namespace sparrow::server {

// One page of a listing. An empty next_page_token is the end of the list.
template <typename T>
struct Page {
  std::vector<T> items;
  std::string next_page_token;
};

struct JobRecord {
  std::string tenant;
  v1::Job job;
};

// A state change of a job, applied atomically with its STATE event (and, for
// a final state, the model).
struct JobTransition {
  v1::Job::State to = v1::Job::STATE_UNSPECIFIED;
  std::string reason;
  // Set on the job when not empty (the optimizer's one-line outcome).
  std::string summary;
  // Stored with the transition when not null (to SUCCEEDED).
  const v1::TrainedModel* model = nullptr;
  // The transition is refused with FAILED_PRECONDITION ("job ... is
  // SUCCEEDED") unless the job is in one of these states; empty = any.
  std::vector<v1::Job::State> from;
  // The job's worker process died: Job.worker_crashes + 1.
  bool worker_crashed = false;
  // Refused with ABORTED (IsLostLease) unless the job's attempts equals the
  // fence: the attempt number a replica holds is its fencing token, so the
  // writes of a replica whose job another replica has taken over fail.
  // kNoFence = no check (a user's cancel, recovery).
  int32_t fence = 0;
};

inline constexpr int32_t kNoFence = 0;

// An error of a write refused by its fence (JobTransition::fence), and the
// mark that makes one.
bool IsLostLease(const absl::Status& status);
absl::Status MarkLostLease(absl::Status status);

struct QueueCounts {
  int64_t all = 0;
  int64_t tenant = 0;
};

// A job a replica has claimed (Store::ClaimJob).
struct ClaimedJob {
  JobRecord record;      // RUNNING, attempts = the new attempt (the fence)
  bool resumed = false;  // taken over from a replica whose lease expired
};

class Store {
 public:
  virtual ~Store() = default;

  // ---- datasets ----

  // Stores the content and its metadata (meta.id is the content's SHA-256)
  // unless the tenant already has that id; then nothing is written, the stored
  // metadata is returned and *already_existed is set.
  virtual absl::StatusOr<v1::Dataset> PutDataset(const std::string& tenant,
                                                 const v1::Dataset& meta,
                                                 absl::string_view content,
                                                 bool* already_existed) = 0;
  // NOT_FOUND names the id.
  virtual absl::StatusOr<v1::Dataset> GetDataset(const std::string& tenant,
                                                 const std::string& id) = 0;
  virtual absl::StatusOr<std::string> GetDatasetContent(
      const std::string& tenant, const std::string& id) = 0;
  // In upload order. page_size must be positive (the service applies the
  // default and the maximum); a malformed page_token is INVALID_ARGUMENT.
  virtual absl::StatusOr<Page<v1::Dataset>> ListDatasets(
      const std::string& tenant, int page_size,
      const std::string& page_token) = 0;
  // FAILED_PRECONDITION (naming a job) while a QUEUED, RUNNING or CANCELLING
  // job of the tenant uses the dataset; checked and deleted atomically.
  virtual absl::Status DeleteDataset(const std::string& tenant,
                                     const std::string& id) = 0;

  // ---- jobs ----

  // Inserts job (its id, spec, priority and request_id set by the caller) as
  // QUEUED with create_time, a first history entry and a first STATE event (seq
  // 1). When job.request_id is not empty and the tenant already has a job with
  // it, nothing is written: that job is returned and *already_existed set (the
  // caller compares the specs).
  virtual absl::StatusOr<v1::Job> CreateJob(const std::string& tenant,
                                            const v1::Job& job,
                                            bool* already_existed) = 0;
  // NOT_FOUND names the id.
  virtual absl::StatusOr<JobRecord> GetJob(const std::string& id) = 0;
  // The tenant's job submitted with this (non-empty) request_id, if any.
  virtual absl::StatusOr<std::optional<v1::Job>> FindJobByRequestId(
      const std::string& tenant, const std::string& request_id) = 0;
  // The tenant's jobs in submission order, filtered by state when state is
  // not STATE_UNSPECIFIED (the filter applies before the page is cut).
  virtual absl::StatusOr<Page<v1::Job>> ListJobs(
      const std::string& tenant, v1::Job::State state, int page_size,
      const std::string& page_token) = 0;
  // Every job in one of these states, all tenants, in submission order (for
  // recovery at start-up and for the queue).
  virtual absl::StatusOr<std::vector<JobRecord>> JobsInStates(
      absl::Span<const v1::Job::State> states) = 0;
  // Applies the transition: sets state and reason, appends to history (with
  // the STATE event's seq),
  // start_time on the first RUNNING (and attempts + 1 on every RUNNING),
  // end_time on a final state, the summary and the model when given, and
  // appends the STATE event. Returns the updated job and the event.
  virtual absl::StatusOr<std::pair<v1::Job, v1::ProgressEvent>> TransitionJob(
      const std::string& id, const JobTransition& transition) = 0;

  // ---- progress ----

  // Appends ITERATION events in one transaction, giving them the seqs last_seq
  // + 1, ...; updates the job's last_seq, iterations and loss from the last
  // event, and folds the events into the job's series blocks of every level
  // (series_blocks.h). Returns the events with seq, job_id and time set.
  // `fence` as in JobTransition. A sweep job's copies of its trials' events
  // (`trial` set) leave its iterations, loss and series alone; a TRIAL_END
  // event (which must have `trial`) keeps its kind and adds its trial to the
  // job's trial_ends in the same transaction.
  virtual absl::StatusOr<std::vector<v1::ProgressEvent>> AppendEvents(
      const std::string& job_id, std::vector<v1::ProgressEvent> events,
      int32_t fence) = 0;
  // Events with seq > after_seq in seq order, at most `limit`.
  virtual absl::StatusOr<std::vector<v1::ProgressEvent>> ListEvents(
      const std::string& job_id, int64_t after_seq, int limit) = 0;
  // Calls `visit` with each of the job's series blocks of `level` (1 ..
  // kSeriesLevels; series_blocks.h) in index order, and returns the job as of
  // the same read: its last_seq is the last event the blocks include. A job
  // has about last_seq / 8^level blocks.
  virtual absl::StatusOr<v1::Job> ScanSeriesBlocks(
      const std::string& job_id, int level,
      const std::function<void(const v1::SeriesBlock&)>& visit) = 0;

  // ---- checkpoints and models ----

  // One checkpoint per job; a new one replaces the old. `fence` as in
  // JobTransition.
  virtual absl::Status PutCheckpoint(const std::string& job_id,
                                     absl::string_view bytes,
                                     int32_t fence) = 0;
  virtual absl::StatusOr<std::optional<std::string>> GetCheckpoint(
      const std::string& job_id) = 0;
  // NOT_FOUND when the job has no model.
  virtual absl::StatusOr<v1::TrainedModel> GetModel(
      const std::string& job_id) = 0;

  // ---- replicas ----
  // A store that several sparrowds share (PostgreSQL) is also their queue:
  // each replica claims the jobs it runs and holds a lease on each, renewed
  // while the job runs; a job whose lease expires is taken over by another
  // replica. The other stores answer UNIMPLEMENTED.

  virtual bool shared() const { return false; }
  // Claims the job `replica` should run next, in one transaction that no
  // other replica's claim can interleave with: a RUNNING job whose lease
  // has expired (it resumes from its checkpoint), else the QUEUED job of
  // highest priority, oldest first, whose memory estimate is at most
  // max_memory. The claim is the job's RUNNING transition (attempts + 1,
  // Job.replica, a lease until now + lease). A CANCELLING job whose lease
  // expired is CANCELLED on the way. Empty when there is nothing to run.
  virtual absl::StatusOr<std::optional<ClaimedJob>> ClaimJob(
      const std::string& replica, absl::Duration lease, int64_t max_memory);
  // Extends the lease of the job's attempt `fence` to now + lease and
  // returns the job (a CANCELLING one is to be stopped). ABORTED
  // (IsLostLease) when the job is no longer that attempt's.
  virtual absl::StatusOr<v1::Job> RenewLease(const std::string& job_id,
                                             int32_t fence,
                                             absl::Duration lease);
  // Ends the leases `replica` holds, so that its jobs are claimed again at
  // once (a replica restarting under the same name); returns how many.
  virtual absl::StatusOr<int64_t> ReleaseLeases(const std::string& replica);
  // QUEUED jobs: all tenants' and one tenant's, in one read.
  virtual absl::StatusOr<QueueCounts> CountQueued(const std::string& tenant);
  // Calls on_change(job_id, seq) on a thread of the store's whenever any
  // replica has committed an event of a job (seq is its last), and
  // on_change("", 0) when some may have been missed (a reconnect). Returns
  // when `stop` is set (checked at least every 200 ms) or with the error
  // that keeps it from listening.
  virtual absl::Status Listen(
      const std::function<void(const std::string& job_id, int64_t seq)>&
          on_change,
      const std::atomic<bool>& stop);
};

// The embedded store: one SQLite database file in WAL mode with
// synchronous=FULL, created (with its tables) when missing. The error names
// the path.
absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path);

// The store on PostgreSQL at a libpq URI (postgresql://user@host/db), its
// tables created (or migrated) when missing. Any number of sparrowd
// replicas may share one database (see "replicas" above). Errors name the
// URI without its password.
absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStore(
    const std::string& uri);

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_STORE_STORE_H_
