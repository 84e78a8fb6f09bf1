// SqlStore: what replicas sharing a PostgreSQL store need — claiming jobs,
// renewing leases, counting the queue. A lease is the jobs row's
// lease_expires, kept by the database's clock (clock_timestamp()), so that
// the replicas' clocks do not matter; the fencing token is Job.attempts.
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "server/store/internal/sql_store.h"
#include "sparrow/v1/checkpoint.pb.h"

namespace sparrow::server::sql {
namespace {

absl::Status NotShared() {
  return absl::UnimplementedError(
      "this store is not shared by replicas (sparrowd --store "
      "postgresql://...)");
}

// The next job whose lease has expired (RUNNING or CANCELLING), oldest
// first; rows another replica is claiming are skipped, not waited for.
constexpr char kSelectExpired[] =
    "SELECT id FROM jobs WHERE state IN (2, 3) "
    "AND lease_expires < clock_timestamp() "
    "ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED";
// The next QUEUED job that fits in ?1 bytes: highest priority, oldest first.
constexpr char kSelectQueued[] =
    "SELECT id FROM jobs WHERE state = 1 AND memory <= ?1 "
    "ORDER BY priority DESC, seq LIMIT 1 FOR UPDATE SKIP LOCKED";
constexpr char kSetLease[] =
    "UPDATE jobs SET lease_expires = clock_timestamp() + "
    "?2 * interval '1 millisecond' WHERE id = ?1";
constexpr char kTakeLease[] =
    "UPDATE jobs SET replica = ?3, lease_expires = clock_timestamp() + "
    "?2 * interval '1 millisecond' WHERE id = ?1";
constexpr char kReleaseLeases[] =
    "UPDATE jobs SET lease_expires = '-infinity' "
    "WHERE replica = ?1 AND state IN (2, 3)";

}  // namespace

absl::StatusOr<std::optional<ClaimedJob>> SqlStore::ClaimJob(
    const std::string& replica, absl::Duration lease, int64_t max_memory) {
  if (!shared_) return NotShared();
  return Retrying([&]() -> absl::StatusOr<std::optional<ClaimedJob>> {
    Session session(&pool_);
    Transaction txn(&conn());
    SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
    SPARROW_ASSIGN_OR_RETURN(std::optional<ClaimedJob> claimed,
                             ClaimNext(replica, max_memory));
    if (claimed.has_value()) {
      SPARROW_ASSIGN_OR_RETURN(Statement take, conn().Prepare(kTakeLease));
      take.BindText(1, claimed->record.job.id());
      take.BindInt64(2, absl::ToInt64Milliseconds(lease));
      take.BindText(3, replica);
      SPARROW_RETURN_IF_ERROR(take.Run());
    }
    SPARROW_RETURN_IF_ERROR(txn.Commit());
    return claimed;
  });
}

absl::StatusOr<std::optional<ClaimedJob>> SqlStore::ClaimNext(
    const std::string& replica, int64_t max_memory) {
  // A CANCELLING job whose replica went away is CANCELLED here; a few at
  // most per claim, so that a claim stays short.
  for (int cancelled = 0; cancelled < 8; ++cancelled) {
    SPARROW_ASSIGN_OR_RETURN(std::optional<std::string> id,
                             SelectOne(kSelectExpired, -1));
    if (!id.has_value()) break;
    SPARROW_ASSIGN_OR_RETURN(JobRecord record, LoadJob(*id));
    std::string tenant = record.tenant;
    const std::string before = record.job.replica();
    if (record.job.state() == v1::Job::CANCELLING) {
      SPARROW_RETURN_IF_ERROR(
          ApplyTransition(std::move(record),
                          {v1::Job::CANCELLED,
                           absl::StrCat("cancelled: replica ", before,
                                        " stopped while the job was stopping"),
                           "",
                           nullptr,
                           {v1::Job::CANCELLING}},
                          replica)
              .status());
      continue;
    }
    SPARROW_ASSIGN_OR_RETURN(std::string from, ResumePoint(*id));
    SPARROW_ASSIGN_OR_RETURN(
        auto running,
        ApplyTransition(
            std::move(record),
            {v1::Job::RUNNING,
             absl::StrCat("resumed on replica ", replica, " ", from, ": ",
                          before == replica
                              ? "the replica restarted"
                              : absl::StrCat("the lease of replica ", before,
                                             " expired")),
             "",
             nullptr,
             {v1::Job::RUNNING}},
            replica));
    return ClaimedJob{{std::move(tenant), std::move(running.first)}, true};
  }
  SPARROW_ASSIGN_OR_RETURN(std::optional<std::string> id,
                           SelectOne(kSelectQueued, max_memory));
  if (!id.has_value()) return std::optional<ClaimedJob>();
  SPARROW_ASSIGN_OR_RETURN(JobRecord record, LoadJob(*id));
  std::string tenant = record.tenant;
  SPARROW_ASSIGN_OR_RETURN(
      auto running,
      ApplyTransition(std::move(record),
                      {v1::Job::RUNNING,
                       absl::StrCat("started on replica ", replica),
                       "",
                       nullptr,
                       {v1::Job::QUEUED}},
                      replica));
  return ClaimedJob{{std::move(tenant), std::move(running.first)}, false};
}

absl::StatusOr<std::string> SqlStore::ResumePoint(const std::string& job_id) {
  SPARROW_ASSIGN_OR_RETURN(
      std::optional<std::string> bytes,
      SelectText("SELECT bytes FROM checkpoints WHERE job_id = ?1", job_id));
  v1::JobCheckpoint checkpoint;
  if (!bytes.has_value() || !checkpoint.ParseFromString(*bytes)) {
    return std::string("from the beginning (no checkpoint yet)");
  }
  return absl::StrCat("from the checkpoint at iteration ",
                      checkpoint.iteration());
}

absl::StatusOr<std::optional<std::string>> SqlStore::SelectText(
    const char* sql, const std::string& param) {
  SPARROW_ASSIGN_OR_RETURN(Statement select, conn().Prepare(sql));
  select.BindText(1, param);
  SPARROW_ASSIGN_OR_RETURN(bool row, select.Step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(select.ColumnString(0));
}

absl::StatusOr<std::optional<std::string>> SqlStore::SelectOne(const char* sql,
                                                               int64_t param) {
  SPARROW_ASSIGN_OR_RETURN(Statement select, conn().Prepare(sql));
  if (param >= 0) select.BindInt64(1, param);
  SPARROW_ASSIGN_OR_RETURN(bool row, select.Step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(select.ColumnString(0));
}

absl::Status SqlStore::SetLease(const std::string& job_id,
                                absl::Duration lease) {
  SPARROW_ASSIGN_OR_RETURN(Statement update, conn().Prepare(kSetLease));
  update.BindText(1, job_id);
  update.BindInt64(2, absl::ToInt64Milliseconds(lease));
  return update.Run();
}

absl::StatusOr<v1::Job> SqlStore::RenewLease(const std::string& job_id,
                                             int32_t fence,
                                             absl::Duration lease) {
  if (!shared_) return NotShared();
  return Retrying([&]() -> absl::StatusOr<v1::Job> {
    Session session(&pool_);
    Transaction txn(&conn());
    SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
    SPARROW_ASSIGN_OR_RETURN(JobRecord record, LoadFenced(job_id, fence));
    SPARROW_RETURN_IF_ERROR(SetLease(job_id, lease));
    SPARROW_RETURN_IF_ERROR(txn.Commit());
    return std::move(record.job);
  });
}

absl::StatusOr<int64_t> SqlStore::ReleaseLeases(const std::string& replica) {
  if (!shared_) return NotShared();
  return Retrying([&]() -> absl::StatusOr<int64_t> {
    Session session(&pool_);
    SPARROW_ASSIGN_OR_RETURN(Statement release, conn().Prepare(kReleaseLeases));
    release.BindText(1, replica);
    SPARROW_RETURN_IF_ERROR(release.Run());
    return release.changes();
  });
}

absl::StatusOr<QueueCounts> SqlStore::CountQueued(const std::string& tenant) {
  if (!shared_) return NotShared();
  Session session(&pool_);
  SPARROW_ASSIGN_OR_RETURN(
      Statement count,
      conn().Prepare("SELECT count(*), count(*) FILTER (WHERE tenant = ?1) "
                     "FROM jobs WHERE state = 1"));
  count.BindText(1, tenant);
  SPARROW_ASSIGN_OR_RETURN(bool row, count.Step());
  QueueCounts counts;
  if (row) {
    counts.all = count.ColumnInt64(0);
    counts.tenant = count.ColumnInt64(1);
  }
  return counts;
}

}  // namespace sparrow::server::sql
