// SqlStore: jobs, their creation, listings and state transitions.
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/util/status_macros.h"
#include "server/store/internal/sql_store.h"
#include "sparrow/v1/job_state.h"
#include "translate/text.h"

namespace sparrow::server::sql {

absl::StatusOr<JobRecord> SqlStore::LoadJob(const std::string& id,
                                            bool for_update) {
  // PostgreSQL: the row stays locked until the transaction ends (SQLite's
  // write transactions exclude each other anyway).
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      conn().Prepare(shared_ && for_update
                         ? "SELECT tenant, job FROM jobs WHERE id = ?1 "
                           "FOR UPDATE"
                         : "SELECT tenant, job FROM jobs WHERE id = ?1"));
  select.BindText(1, id);
  SPARROW_ASSIGN_OR_RETURN(bool found, select.Step());
  if (!found) return JobNotFound(id);
  JobRecord record;
  record.tenant = select.ColumnString(0);
  SPARROW_ASSIGN_OR_RETURN(
      record.job,
      Parse<v1::Job>(select.ColumnBytes(1), absl::StrCat("job ", id)));
  return record;
}

absl::Status SqlStore::InsertJob(const std::string& tenant,
                                 const v1::Job& job) {
  // A shared store also keeps what a claim orders and filters by.
  SPARROW_ASSIGN_OR_RETURN(
      Statement insert,
      conn().Prepare(shared_
                         ? "INSERT INTO jobs (id, tenant, request_id, state, "
                           "dataset_id, job, priority, memory) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
                         : "INSERT INTO jobs (id, tenant, request_id, state, "
                           "dataset_id, job) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  insert.BindText(1, job.id());
  insert.BindText(2, tenant);
  insert.BindTextOrNull(3, job.request_id());
  insert.BindInt64(4, job.state());
  insert.BindTextOrNull(5, job.spec().data().dataset_id());
  insert.BindBlob(6, job.SerializeAsString());
  if (shared_) {
    insert.BindInt64(7, job.priority());
    insert.BindInt64(8, job.memory_estimate_bytes());
  }
  return insert.Run();
}

absl::StatusOr<JobRecord> SqlStore::LoadFenced(const std::string& id,
                                               int32_t fence) {
  SPARROW_ASSIGN_OR_RETURN(JobRecord record, LoadJob(id, /*for_update=*/true));
  if (fence != kNoFence && record.job.attempts() != fence) {
    return LostLease(id, fence, record.job);
  }
  return record;
}

absl::Status SqlStore::Notify(const std::string& job_id, int64_t seq) {
  if (!shared_) return absl::OkStatus();
  SPARROW_ASSIGN_OR_RETURN(Statement notify,
                           conn().Prepare("SELECT pg_notify(?1, ?2)"));
  notify.BindText(1, kEventsChannel);
  notify.BindText(2, absl::StrCat(job_id, " ", seq));
  SPARROW_ASSIGN_OR_RETURN(bool row, notify.Step());
  (void)row;
  return absl::OkStatus();
}

absl::Status SqlStore::UpdateJob(const v1::Job& job) {
  SPARROW_ASSIGN_OR_RETURN(
      Statement update,
      conn().Prepare("UPDATE jobs SET state = ?2, job = ?3 WHERE id = ?1"));
  update.BindText(1, job.id());
  update.BindInt64(2, job.state());
  update.BindBlob(3, job.SerializeAsString());
  SPARROW_RETURN_IF_ERROR(update.Run());
  if (update.changes() != 1) return JobNotFound(job.id());
  return absl::OkStatus();
}

absl::Status SqlStore::InsertEvent(Statement& insert,
                                   const v1::ProgressEvent& event) {
  insert.Reset();
  insert.BindText(1, event.job_id());
  insert.BindInt64(2, event.seq());
  insert.BindBlob(3, event.SerializeAsString());
  return insert.Run();
}

absl::StatusOr<v1::Job> SqlStore::CreateJob(const std::string& tenant,
                                            const v1::Job& job,
                                            bool* already_existed) {
  if (already_existed != nullptr) *already_existed = false;
  if (job.id().empty()) return absl::InvalidArgumentError("job id is empty");
  return Retrying([&]() -> absl::StatusOr<v1::Job> {
    return CreateJobOnce(tenant, job, already_existed);
  });
}

absl::StatusOr<v1::Job> SqlStore::CreateJobOnce(const std::string& tenant,
                                                const v1::Job& job,
                                                bool* already_existed) {
  Session session(&pool_);
  Transaction txn(&conn());
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
  if (!job.request_id().empty()) {
    SPARROW_ASSIGN_OR_RETURN(std::optional<v1::Job> existing,
                             FindByRequestId(tenant, job.request_id()));
    if (existing.has_value()) {
      if (already_existed != nullptr) *already_existed = true;
      return *std::move(existing);
    }
  }
  {
    SPARROW_ASSIGN_OR_RETURN(
        Statement select, conn().Prepare("SELECT 1 FROM jobs WHERE id = ?1"));
    select.BindText(1, job.id());
    SPARROW_ASSIGN_OR_RETURN(bool taken, select.Step());
    if (taken) {
      return absl::AlreadyExistsError(
          absl::StrCat("job ", job.id(), " already exists"));
    }
  }

  const google::protobuf::Timestamp now = ToTimestamp(absl::Now());
  constexpr char kReason[] = "submitted";
  // The caller's id, spec, priority and request_id; the rest is the store's.
  v1::Job stored = job;
  stored.set_state(v1::Job::QUEUED);
  stored.set_reason(kReason);
  *stored.mutable_create_time() = now;
  stored.clear_start_time();
  stored.clear_end_time();
  stored.clear_history();
  stored.set_attempts(0);
  stored.set_iterations(0);
  stored.set_loss(0);
  stored.clear_summary();
  v1::Job::Transition* first = stored.add_history();
  first->set_state(v1::Job::QUEUED);
  *first->mutable_time() = now;
  first->set_reason(kReason);
  first->set_seq(1);
  stored.set_last_seq(1);

  v1::ProgressEvent event;
  event.set_job_id(stored.id());
  event.set_seq(1);
  event.set_kind(v1::ProgressEvent::STATE);
  *event.mutable_time() = now;
  event.set_state(v1::Job::QUEUED);
  event.set_reason(kReason);

  SPARROW_RETURN_IF_ERROR(InsertJob(tenant, stored));
  SPARROW_ASSIGN_OR_RETURN(Statement insert, conn().Prepare(kInsertEvent));
  SPARROW_RETURN_IF_ERROR(InsertEvent(insert, event));
  SPARROW_RETURN_IF_ERROR(Notify(stored.id(), 1));
  SPARROW_RETURN_IF_ERROR(txn.Commit());
  return stored;
}

absl::StatusOr<JobRecord> SqlStore::GetJob(const std::string& id) {
  Session session(&pool_);
  return LoadJob(id);
}

absl::StatusOr<std::optional<v1::Job>> SqlStore::FindJobByRequestId(
    const std::string& tenant, const std::string& request_id) {
  if (request_id.empty()) return std::optional<v1::Job>();
  Session session(&pool_);
  return FindByRequestId(tenant, request_id);
}

absl::StatusOr<std::optional<v1::Job>> SqlStore::FindByRequestId(
    const std::string& tenant, const std::string& request_id) {
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      conn().Prepare("SELECT id, job FROM jobs "
                     "WHERE tenant = ?1 AND request_id = ?2"));
  select.BindText(1, tenant);
  select.BindText(2, request_id);
  SPARROW_ASSIGN_OR_RETURN(bool found, select.Step());
  if (!found) return std::optional<v1::Job>();
  SPARROW_ASSIGN_OR_RETURN(
      v1::Job existing,
      Parse<v1::Job>(select.ColumnBytes(1),
                     absl::StrCat("job ", select.ColumnBytes(0))));
  return std::optional<v1::Job>(std::move(existing));
}

absl::StatusOr<Page<v1::Job>> SqlStore::ListJobs(
    const std::string& tenant, v1::Job::State state, int page_size,
    const std::string& page_token) {
  SPARROW_RETURN_IF_ERROR(CheckPageSize(page_size));
  // The filter is part of the token: a token is only good for its filter.
  const std::string listing = absl::StrCat("jobs.", static_cast<int>(state));
  SPARROW_ASSIGN_OR_RETURN(int64_t after, DecodePageToken(listing, page_token));
  const bool filtered = state != v1::Job::STATE_UNSPECIFIED;
  Session session(&pool_);
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      conn().Prepare(filtered ? "SELECT seq, id, job FROM jobs "
                                "WHERE tenant = ?1 AND state = ?3 AND seq > ?2 "
                                "ORDER BY seq"
                              : "SELECT seq, id, job FROM jobs "
                                "WHERE tenant = ?1 AND seq > ?2 ORDER BY seq"));
  select.BindText(1, tenant);
  select.BindInt64(2, after);
  if (filtered) select.BindInt64(3, state);
  return ReadPage<v1::Job>(select, listing, page_size, "job");
}

absl::StatusOr<std::vector<JobRecord>> SqlStore::JobsInStates(
    absl::Span<const v1::Job::State> states) {
  std::vector<JobRecord> records;
  if (states.empty()) return records;
  std::vector<std::string> placeholders;
  for (size_t i = 1; i <= states.size(); ++i) {
    placeholders.push_back(absl::StrCat("?", i));
  }
  Session session(&pool_);
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      conn().Prepare(
          absl::StrCat("SELECT tenant, id, job FROM jobs WHERE state IN (",
                       absl::StrJoin(placeholders, ", "), ") ORDER BY seq")));
  for (size_t i = 0; i < states.size(); ++i) {
    select.BindInt64(static_cast<int>(i) + 1, states[i]);
  }
  while (true) {
    SPARROW_ASSIGN_OR_RETURN(bool row, select.Step());
    if (!row) break;
    JobRecord record;
    record.tenant = select.ColumnString(0);
    auto job = Parse<v1::Job>(select.ColumnBytes(2),
                              absl::StrCat("job ", select.ColumnBytes(1)));
    if (!job.ok()) {
      // One unreadable job must not keep the server from starting.
      spdlog::error("store: skipping a job it cannot read: {}",
                    std::string(job.status().message()));
      continue;
    }
    record.job = *std::move(job);
    records.push_back(std::move(record));
  }
  return records;
}

absl::StatusOr<std::pair<v1::Job, v1::ProgressEvent>> SqlStore::TransitionJob(
    const std::string& id, const JobTransition& transition) {
  const v1::Job::State to = transition.to;
  if (to == v1::Job::STATE_UNSPECIFIED || !v1::Job::State_IsValid(to)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot move job ", id, " to state ", static_cast<int>(to)));
  }
  return Retrying(
      [&]() -> absl::StatusOr<std::pair<v1::Job, v1::ProgressEvent>> {
        Session session(&pool_);
        Transaction txn(&conn());
        SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
        SPARROW_ASSIGN_OR_RETURN(JobRecord record,
                                 LoadFenced(id, transition.fence));
        SPARROW_ASSIGN_OR_RETURN(
            auto updated, ApplyTransition(std::move(record), transition, ""));
        SPARROW_RETURN_IF_ERROR(txn.Commit());
        return updated;
      });
}

absl::StatusOr<std::pair<v1::Job, v1::ProgressEvent>> SqlStore::ApplyTransition(
    JobRecord record, const JobTransition& transition,
    const std::string& replica) {
  const v1::Job::State to = transition.to;
  v1::Job& job = record.job;
  const std::string& id = job.id();
  if (!transition.from.empty() &&
      std::find(transition.from.begin(), transition.from.end(), job.state()) ==
          transition.from.end()) {
    std::vector<std::string> from;
    for (v1::Job::State s : transition.from) {
      from.push_back(v1::Job::State_Name(s));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " is ", v1::Job::State_Name(job.state()),
                     "; only a ", absl::StrJoin(from, " or "),
                     " job can become ", v1::Job::State_Name(to)));
  }

  const google::protobuf::Timestamp now = ToTimestamp(absl::Now());
  // Reasons may quote what a job read (a column, a value); a stored record
  // must stay parseable, so text that is not UTF-8 is stored repaired.
  const std::string reason = translate::ToValidUtf8(transition.reason);
  job.set_state(to);
  job.set_reason(reason);
  v1::Job::Transition* entry = job.add_history();
  entry->set_state(to);
  *entry->mutable_time() = now;
  entry->set_reason(reason);
  if (to == v1::Job::RUNNING) {
    if (!job.has_start_time()) *job.mutable_start_time() = now;
    job.set_attempts(job.attempts() + 1);
  }
  if (!replica.empty()) job.set_replica(replica);
  if (v1::IsFinal(to)) *job.mutable_end_time() = now;
  if (transition.worker_crashed) {
    job.set_worker_crashes(job.worker_crashes() + 1);
  }
  if (!transition.summary.empty()) {
    job.set_summary(translate::ToValidUtf8(transition.summary));
  }
  if (transition.model != nullptr) {  // listing jobs then needs no model
    *job.mutable_metrics() = transition.model->metrics();
    job.mutable_metrics()->clear_layers();
    job.mutable_metrics()->clear_removed();
    job.set_model_partial(transition.model->partial());
  }
  job.set_last_seq(job.last_seq() + 1);
  entry->set_seq(job.last_seq());

  v1::ProgressEvent event;
  event.set_job_id(id);
  event.set_seq(job.last_seq());
  event.set_kind(v1::ProgressEvent::STATE);
  *event.mutable_time() = now;
  event.set_state(to);
  event.set_reason(reason);

  SPARROW_RETURN_IF_ERROR(UpdateJob(job));
  SPARROW_ASSIGN_OR_RETURN(Statement insert, conn().Prepare(kInsertEvent));
  SPARROW_RETURN_IF_ERROR(InsertEvent(insert, event));
  if (transition.model != nullptr) {
    SPARROW_ASSIGN_OR_RETURN(
        Statement put, conn().Prepare("INSERT INTO models (job_id, model) "
                                      "VALUES (?1, ?2) ON CONFLICT (job_id) "
                                      "DO UPDATE SET model = excluded.model"));
    put.BindText(1, id);
    put.BindBlob(2, transition.model->SerializeAsString());
    SPARROW_RETURN_IF_ERROR(put.Run());
  }
  SPARROW_RETURN_IF_ERROR(Notify(id, event.seq()));
  return std::make_pair(std::move(job), std::move(event));
}

}  // namespace sparrow::server::sql
