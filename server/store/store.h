// The Store: everything sparrowd must not lose — datasets, jobs with their
// state history, progress events, checkpoints and trained models. Every write
// is durable (committed and synced) when the call returns, so whatever the
// service acknowledges survives a crash. Implementations are thread-safe.
//
// Tenancy: datasets are keyed by (tenant, id); jobs and everything hanging off
// them are keyed by job id and carry their tenant, which the services check.
#ifndef SPARROW_SERVER_STORE_STORE_H_
#define SPARROW_SERVER_STORE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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
  virtual absl::StatusOr<std::vector<v1::ProgressEvent>> AppendEvents(
      const std::string& job_id, std::vector<v1::ProgressEvent> events) = 0;
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

  // One checkpoint per job; a new one replaces the old.
  virtual absl::Status PutCheckpoint(const std::string& job_id,
                                     absl::string_view bytes) = 0;
  virtual absl::StatusOr<std::optional<std::string>> GetCheckpoint(
      const std::string& job_id) = 0;
  // NOT_FOUND when the job has no model.
  virtual absl::StatusOr<v1::TrainedModel> GetModel(
      const std::string& job_id) = 0;
};

// The embedded store: one SQLite database file in WAL mode with
// synchronous=FULL, created (with its tables) when missing. The error names
// the path.
absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path);

// The store on PostgreSQL at a libpq URI (postgresql://user@host/db), its
// tables created when missing. One sparrowd per database: a second is
// refused with FAILED_PRECONDITION. Errors name the URI without its password.
absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStore(
    const std::string& uri);

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_STORE_STORE_H_
