// SqlStore, the Store over one SQL database connection (sql_db.h), written
// once for SQLite and PostgreSQL: the same statements, with `?N`
// placeholders, run on either. Its member functions are defined by concern:
// datasets in sql_datasets.cc, jobs in sql_jobs.cc, progress events,
// checkpoints and models in sql_events.cc, series blocks and the series
// migration in sql_series.cc. Opening and the schemas are per database, in
// sqlite_store.cc and pg_store.cc. Internal to server/store/.
#ifndef SPARROW_SERVER_STORE_INTERNAL_SQL_STORE_H_
#define SPARROW_SERVER_STORE_INTERNAL_SQL_STORE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/store/internal/sql_common.h"
#include "server/store/internal/sql_db.h"
#include "server/store/store.h"

namespace sparrow::server::sql {

// Connections, each used by one call at a time.
class ConnectionPool {
 public:
  explicit ConnectionPool(std::vector<Connection> connections);
  // A free connection; waits for one when all are in use.
  Connection* Acquire();
  void Release(Connection* connection);

 private:
  std::mutex mu_;
  std::condition_variable freed_;
  std::vector<Connection> all_;
  std::vector<Connection*> free_;
};

// Holds a connection of the pool for the current thread for its lifetime:
// the store's helpers use Session::current() (SqlStore::conn()), so that they
// need not pass it around.
class Session {
 public:
  explicit Session(ConnectionPool* pool)
      : pool_(pool), connection_(pool->Acquire()), outer_(current_) {
    current_ = connection_;
  }
  ~Session() {
    current_ = outer_;
    pool_->Release(connection_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  static Connection* current() { return current_; }

 private:
  ConnectionPool* pool_;
  Connection* connection_;
  Connection* outer_;
  static thread_local Connection* current_;
};

class SqlStore : public Store {
 public:
  // shared: the database is PostgreSQL with the lease columns of its schema
  // (pg_store.cc), which replicas share; writes then notify the other
  // replicas (NOTIFY sparrow_events) and the claim calls work.
  // Calls run on one of `connections` each (one for SQLite, which has one
  // writer anyway; several for PostgreSQL, so that reads and the writes of
  // different jobs do not queue behind each other).
  SqlStore(std::vector<Connection> connections, bool shared)
      : shared_(shared), pool_(std::move(connections)) {}

  absl::StatusOr<v1::Dataset> PutDataset(const std::string& tenant,
                                         const v1::Dataset& meta,
                                         absl::string_view content,
                                         bool* already_existed) override;
  absl::StatusOr<v1::Dataset> GetDataset(const std::string& tenant,
                                         const std::string& id) override;
  absl::StatusOr<std::string> GetDatasetContent(const std::string& tenant,
                                                const std::string& id) override;
  absl::StatusOr<Page<v1::Dataset>> ListDatasets(
      const std::string& tenant, int page_size,
      const std::string& page_token) override;
  absl::Status DeleteDataset(const std::string& tenant,
                             const std::string& id) override;

  absl::StatusOr<v1::Job> CreateJob(const std::string& tenant,
                                    const v1::Job& job,
                                    bool* already_existed) override;
  absl::StatusOr<JobRecord> GetJob(const std::string& id) override;
  absl::StatusOr<std::optional<v1::Job>> FindJobByRequestId(
      const std::string& tenant, const std::string& request_id) override;
  absl::StatusOr<Page<v1::Job>> ListJobs(
      const std::string& tenant, v1::Job::State state, int page_size,
      const std::string& page_token) override;
  absl::StatusOr<std::vector<JobRecord>> JobsInStates(
      absl::Span<const v1::Job::State> states) override;
  absl::StatusOr<std::pair<v1::Job, v1::ProgressEvent>> TransitionJob(
      const std::string& id, const JobTransition& transition) override;

  absl::StatusOr<std::vector<v1::ProgressEvent>> AppendEvents(
      const std::string& job_id, std::vector<v1::ProgressEvent> events,
      int32_t fence) override;
  absl::StatusOr<std::vector<v1::ProgressEvent>> ListEvents(
      const std::string& job_id, int64_t after_seq, int limit) override;

  absl::StatusOr<v1::Job> ScanSeriesBlocks(
      const std::string& job_id, int level,
      const std::function<void(const v1::SeriesBlock&)>& visit) override;

  // Brings a store of an older schema up to date: runs `schema` (which
  // creates what is missing), builds every job's series blocks and the seqs
  // of its history, and runs `set_version`, all in one transaction.
  absl::Status Migrate(const char* schema, const char* set_version);

  absl::Status PutCheckpoint(const std::string& job_id, absl::string_view bytes,
                             int32_t fence) override;
  absl::StatusOr<std::optional<std::string>> GetCheckpoint(
      const std::string& job_id) override;
  absl::StatusOr<v1::TrainedModel> GetModel(const std::string& job_id) override;

  // Replicas (sql_leases.cc); UNIMPLEMENTED unless shared.
  bool shared() const override { return shared_; }
  absl::StatusOr<std::optional<ClaimedJob>> ClaimJob(
      const std::string& replica, absl::Duration lease,
      int64_t max_memory) override;
  absl::StatusOr<v1::Job> RenewLease(const std::string& job_id, int32_t fence,
                                     absl::Duration lease) override;
  absl::StatusOr<QueueCounts> CountQueued(const std::string& tenant) override;
  absl::StatusOr<int64_t> ReleaseLeases(const std::string& replica) override;

 protected:
  // Runs `body` (which opens a Session and runs one transaction) again, up to
  // a few times, while it fails because a concurrent transaction of another
  // replica conflicted with it (a serialization failure or a deadlock,
  // ABORTED); a write refused by its fence is not retried.
  template <typename F>
  auto Retrying(F body) -> decltype(body());

 private:
  // The helpers below run inside the caller's Session (and transaction).
  absl::StatusOr<v1::Dataset> PutDatasetOnce(const std::string& tenant,
                                             const v1::Dataset& meta,
                                             absl::string_view content,
                                             bool* already_existed);
  absl::StatusOr<std::optional<v1::Dataset>> FindDataset(
      const std::string& tenant, const std::string& id);
  // OK unless an unfinished job reads the dataset (FAILED_PRECONDITION).
  absl::Status CheckDatasetUnused(const std::string& tenant,
                                  const std::string& id);
  // The one-row blob `select_sql` (with ?1 = tenant, ?2 = id) reads for a
  // dataset; empty when there is no row.
  absl::StatusOr<std::optional<std::string>> DatasetBlob(
      const char* select_sql, const std::string& tenant, const std::string& id);
  absl::StatusOr<JobRecord> LoadJob(const std::string& id,
                                    bool for_update = false);
  absl::StatusOr<std::optional<v1::Job>> FindByRequestId(
      const std::string& tenant, const std::string& request_id);
  // The one-row blob `select_sql` (with ?1 = job_id) reads for a job that
  // exists (NOT_FOUND otherwise); empty when there is no row. Opens a Session.
  absl::StatusOr<std::optional<std::string>> JobBlob(const std::string& job_id,
                                                     const char* select_sql);
  absl::StatusOr<v1::Job> CreateJobOnce(const std::string& tenant,
                                        const v1::Job& job,
                                        bool* already_existed);
  absl::Status InsertJob(const std::string& tenant, const v1::Job& job);
  // The job, loaded for a write by the holder of `fence` (JobTransition).
  absl::StatusOr<JobRecord> LoadFenced(const std::string& id, int32_t fence);
  // TransitionJob inside the caller's transaction.
  absl::StatusOr<std::pair<v1::Job, v1::ProgressEvent>> ApplyTransition(
      JobRecord record, const JobTransition& transition,
      const std::string& replica);
  // ClaimJob inside the caller's transaction, without the lease.
  absl::StatusOr<std::optional<ClaimedJob>> ClaimNext(
      const std::string& replica, int64_t max_memory);
  // The first column of the first row of `sql` (?1 = param unless < 0).
  absl::StatusOr<std::optional<std::string>> SelectOne(const char* sql,
                                                       int64_t param);
  absl::Status SetLease(const std::string& job_id, absl::Duration lease);
  // Where a resumed job starts: "from the checkpoint at iteration K".
  absl::StatusOr<std::string> ResumePoint(const std::string& job_id);
  // The first column of the first row of `sql` with ?1 = param.
  absl::StatusOr<std::optional<std::string>> SelectText(
      const char* sql, const std::string& param);
  // Tells the other replicas (shared only) that the job's events up to seq
  // are stored, when the transaction commits.
  absl::Status Notify(const std::string& job_id, int64_t seq);
  absl::Status UpdateJob(const v1::Job& job);
  absl::Status InsertEvent(Statement& insert, const v1::ProgressEvent& event);
  // AppendEvents inside the caller's transaction: numbers the events after
  // the job's last_seq, inserts them, folds them into the job and its series
  // blocks and updates the job.
  absl::Status StoreEvents(v1::Job* job, absl::Span<v1::ProgressEvent> events);
  absl::Status PutCheckpointOnce(const std::string& job_id,
                                 absl::string_view bytes, int32_t fence);
  // The job's events after after_seq in seq order, at most `limit`.
  absl::StatusOr<std::vector<v1::ProgressEvent>> SelectEvents(
      const std::string& job_id, int64_t after_seq, int limit);
  // Folds the job's new events into its stored series blocks.
  absl::Status UpdateSeriesBlocks(const std::string& job_id,
                                  absl::Span<const v1::ProgressEvent> events);
  absl::Status BuildSeriesBlocks(const std::string& job_id);

  // The connection of the calling thread's Session.
  static Connection& conn() { return *Session::current(); }

  const bool shared_;
  ConnectionPool pool_;
};

// Adds one progress event: ?1 job_id, ?2 seq, ?3 the serialized event.
inline constexpr char kInsertEvent[] =
    "INSERT INTO events (job_id, seq, event) VALUES (?1, ?2, ?3)";

bool IsRetryable(const absl::Status& status);
inline const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}
// A pause of a few milliseconds, longer after each try, jittered so that
// replicas that conflicted do not conflict again.
void RetryPause(int tries);

template <typename F>
auto SqlStore::Retrying(F body) -> decltype(body()) {
  constexpr int kMaxTries = 8;
  for (int tries = 1;; ++tries) {
    auto result = body();
    if (tries == kMaxTries || !IsRetryable(StatusOf(result))) return result;
    RetryPause(tries);
  }
}

// The channel of the NOTIFYs of shared stores: payload "<job id> <seq>".
inline constexpr char kEventsChannel[] = "sparrow_events";

}  // namespace sparrow::server::sql

#endif  // SPARROW_SERVER_STORE_INTERNAL_SQL_STORE_H_
