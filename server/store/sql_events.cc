// SqlStore: a job's progress events, its checkpoint and its model.
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/util/status_macros.h"
#include "server/store/internal/sql_store.h"
#include "sparrow/v1/job_state.h"

namespace sparrow::server::sql {

// ---- progress events ----

namespace {

// The events of `events` to store on `job` (its stored record, locked): a
// TRIAL_END of a trial the job has announced, or on a job that has ended, is
// left out (a second replica's, or a retry's after a commit that went
// through), so that each trial's end is in the log once and before the
// job's final state. TRIAL_END belongs to sweep jobs only.
absl::StatusOr<std::vector<v1::ProgressEvent>> ToStore(
    const v1::Job& job, const std::vector<v1::ProgressEvent>& events) {
  std::vector<v1::ProgressEvent> out;
  out.reserve(events.size());
  for (const v1::ProgressEvent& e : events) {
    if (e.kind() != v1::ProgressEvent::TRIAL_END) {
      out.push_back(e);
      continue;
    }
    if (!job.spec().has_sweep()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job ", job.id(), ": TRIAL_END events belong to sweep jobs"));
    }
    if (v1::IsFinal(job.state()) ||
        absl::c_linear_search(job.trial_ends(), e.trial())) {
      continue;
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<v1::ProgressEvent>> SqlStore::AppendEvents(
    const std::string& job_id, std::vector<v1::ProgressEvent> events,
    int32_t fence) {
  for (const v1::ProgressEvent& event : events) {
    if (event.kind() == v1::ProgressEvent::STATE) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job ", job_id,
          ": STATE events are appended by TransitionJob, not AppendEvents"));
    }
    if (event.kind() == v1::ProgressEvent::TRIAL_END && !event.has_trial()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job ", job_id, ": a TRIAL_END event must name its trial"));
    }
  }
  const bool trial_ends = absl::c_any_of(events, [](const auto& e) {
    return e.kind() == v1::ProgressEvent::TRIAL_END;
  });
  return Retrying([&]() -> absl::StatusOr<std::vector<v1::ProgressEvent>> {
    Session session(&pool_);
    Transaction txn(&conn());
    SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
    SPARROW_ASSIGN_OR_RETURN(JobRecord record, LoadFenced(job_id, fence));
    // Iteration events, the frequent case, are stored as they are; only a
    // batch with a TRIAL_END is filtered (into a copy: a retry starts again
    // from `events`).
    std::vector<v1::ProgressEvent> filtered;
    std::vector<v1::ProgressEvent>* batch = &events;
    if (trial_ends) {
      SPARROW_ASSIGN_OR_RETURN(filtered, ToStore(record.job, events));
      batch = &filtered;
    }
    if (batch->empty()) return std::vector<v1::ProgressEvent>();
    SPARROW_RETURN_IF_ERROR(StoreEvents(&record.job, absl::MakeSpan(*batch)));
    SPARROW_RETURN_IF_ERROR(txn.Commit());
    return std::move(*batch);  // stored: no retry follows
  });
}

absl::Status SqlStore::StoreEvents(v1::Job* stored,
                                   absl::Span<v1::ProgressEvent> events) {
  v1::Job& job = *stored;
  const std::string& job_id = job.id();
  const google::protobuf::Timestamp now = ToTimestamp(absl::Now());
  SPARROW_ASSIGN_OR_RETURN(Statement insert, conn().Prepare(kInsertEvent));
  for (v1::ProgressEvent& event : events) {
    event.set_job_id(job_id);
    event.set_seq(job.last_seq() + 1);
    if (event.kind() != v1::ProgressEvent::TRIAL_END) {
      event.set_kind(v1::ProgressEvent::ITERATION);
    } else {
      job.add_trial_ends(event.trial());
    }
    if (!event.has_time()) *event.mutable_time() = now;
    SPARROW_RETURN_IF_ERROR(InsertEvent(insert, event));
    job.set_last_seq(event.seq());
    if (event.has_trial()) continue;  // a sweep's copy: the trial has these
    if (event.has_validation_metric() &&
        (!job.has_best_validation_metric() ||
         event.validation_metric() < job.best_validation_metric())) {
      job.set_best_validation_metric(event.validation_metric());
    }
    if (event.has_sparsity_pct()) job.set_sparsity_pct(event.sparsity_pct());
  }
  SPARROW_RETURN_IF_ERROR(UpdateSeriesBlocks(job_id, events));
  if (!events.back().has_trial()) {
    job.set_iterations(events.back().iteration());
    job.set_loss(events.back().loss());
    job.set_elapsed_seconds(events.back().elapsed_seconds());
  }
  SPARROW_RETURN_IF_ERROR(UpdateJob(job));
  return Notify(job_id, job.last_seq());
}

absl::StatusOr<std::vector<v1::ProgressEvent>> SqlStore::ListEvents(
    const std::string& job_id, int64_t after_seq, int limit) {
  if (limit <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit must be positive, got ", limit));
  }
  Session session(&pool_);
  Transaction txn(&conn());
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kRead));
  SPARROW_RETURN_IF_ERROR(LoadJob(job_id).status());
  return SelectEvents(job_id, after_seq, limit);
}

absl::StatusOr<std::vector<v1::ProgressEvent>> SqlStore::SelectEvents(
    const std::string& job_id, int64_t after_seq, int limit) {
  SPARROW_ASSIGN_OR_RETURN(Statement select,
                           conn().Prepare("SELECT seq, event FROM events "
                                          "WHERE job_id = ?1 AND seq > ?2 "
                                          "ORDER BY seq LIMIT ?3"));
  select.BindText(1, job_id);
  select.BindInt64(2, after_seq);
  select.BindInt64(3, limit);
  std::vector<v1::ProgressEvent> events;
  while (true) {
    SPARROW_ASSIGN_OR_RETURN(bool row, select.Step());
    if (!row) break;
    SPARROW_ASSIGN_OR_RETURN(
        v1::ProgressEvent event,
        Parse<v1::ProgressEvent>(
            select.ColumnBytes(1),
            absl::StrCat("event ", select.ColumnInt64(0), " of job ", job_id)));
    events.push_back(std::move(event));
  }
  return events;
}

// ---- checkpoints and models ----

absl::Status SqlStore::PutCheckpoint(const std::string& job_id,
                                     absl::string_view bytes, int32_t fence) {
  return Retrying([&] { return PutCheckpointOnce(job_id, bytes, fence); });
}

absl::Status SqlStore::PutCheckpointOnce(const std::string& job_id,
                                         absl::string_view bytes,
                                         int32_t fence) {
  Session session(&pool_);
  Transaction txn(&conn());
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
  SPARROW_RETURN_IF_ERROR(LoadFenced(job_id, fence).status());
  SPARROW_ASSIGN_OR_RETURN(
      Statement put,
      conn().Prepare(
          "INSERT INTO checkpoints (job_id, bytes, update_time) "
          "VALUES (?1, ?2, ?3) ON CONFLICT (job_id) DO UPDATE SET "
          "bytes = excluded.bytes, update_time = excluded.update_time"));
  put.BindText(1, job_id);
  put.BindBlob(2, bytes);
  put.BindInt64(3, absl::ToUnixNanos(absl::Now()));
  SPARROW_RETURN_IF_ERROR(put.Run());
  return txn.Commit();
}

absl::StatusOr<std::optional<std::string>> SqlStore::JobBlob(
    const std::string& job_id, const char* select_sql) {
  Session session(&pool_);
  Transaction txn(&conn());
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kRead));
  SPARROW_RETURN_IF_ERROR(LoadJob(job_id).status());
  SPARROW_ASSIGN_OR_RETURN(Statement select, conn().Prepare(select_sql));
  select.BindText(1, job_id);
  SPARROW_ASSIGN_OR_RETURN(bool found, select.Step());
  if (!found) return std::optional<std::string>();
  return std::optional<std::string>(select.ColumnString(0));
}

absl::StatusOr<std::optional<std::string>> SqlStore::GetCheckpoint(
    const std::string& job_id) {
  return JobBlob(job_id, "SELECT bytes FROM checkpoints WHERE job_id = ?1");
}

absl::StatusOr<v1::TrainedModel> SqlStore::GetModel(const std::string& job_id) {
  SPARROW_ASSIGN_OR_RETURN(
      std::optional<std::string> blob,
      JobBlob(job_id, "SELECT model FROM models WHERE job_id = ?1"));
  if (!blob.has_value()) {
    return absl::NotFoundError(absl::StrCat("job ", job_id, " has no model"));
  }
  return Parse<v1::TrainedModel>(*blob,
                                 absl::StrCat("the model of job ", job_id));
}

}  // namespace sparrow::server::sql
