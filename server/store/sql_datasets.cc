// SqlStore: datasets (their metadata and content).
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "server/store/internal/sql_store.h"
#include "translate/text.h"

namespace sparrow::server::sql {

absl::StatusOr<std::optional<std::string>> SqlStore::DatasetBlob(
    const char* select_sql, const std::string& tenant, const std::string& id) {
  SPARROW_ASSIGN_OR_RETURN(Statement select, conn().Prepare(select_sql));
  select.BindText(1, tenant);
  select.BindText(2, id);
  SPARROW_ASSIGN_OR_RETURN(bool found, select.Step());
  if (!found) return std::optional<std::string>();
  return std::optional<std::string>(select.ColumnString(0));
}

absl::StatusOr<std::optional<v1::Dataset>> SqlStore::FindDataset(
    const std::string& tenant, const std::string& id) {
  SPARROW_ASSIGN_OR_RETURN(
      std::optional<std::string> blob,
      DatasetBlob("SELECT meta FROM datasets WHERE tenant = ?1 AND id = ?2",
                  tenant, id));
  if (!blob.has_value()) return std::nullopt;
  SPARROW_ASSIGN_OR_RETURN(
      v1::Dataset meta,
      Parse<v1::Dataset>(*blob,
                         absl::StrCat("dataset ", id, " of tenant ", tenant)));
  return meta;
}

absl::StatusOr<v1::Dataset> SqlStore::PutDataset(const std::string& tenant,
                                                 const v1::Dataset& meta,
                                                 absl::string_view content,
                                                 bool* already_existed) {
  if (already_existed != nullptr) *already_existed = false;
  if (meta.id().empty()) {
    return absl::InvalidArgumentError("dataset id is empty");
  }
  // Two replicas storing the same upload at once: one insert waits for the
  // other's and fails on its key; the retry finds the stored dataset.
  return Retrying([&]() -> absl::StatusOr<v1::Dataset> {
    return PutDatasetOnce(tenant, meta, content, already_existed);
  });
}

absl::StatusOr<v1::Dataset> SqlStore::PutDatasetOnce(const std::string& tenant,
                                                     const v1::Dataset& meta,
                                                     absl::string_view content,
                                                     bool* already_existed) {
  Session session(&pool_);
  Transaction txn(&conn());
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
  SPARROW_ASSIGN_OR_RETURN(std::optional<v1::Dataset> existing,
                           FindDataset(tenant, meta.id()));
  if (existing.has_value()) {
    if (already_existed != nullptr) *already_existed = true;
    return *std::move(existing);
  }
  v1::Dataset stored = meta;
  if (!stored.has_create_time()) {
    *stored.mutable_create_time() = ToTimestamp(absl::Now());
  }
  SPARROW_ASSIGN_OR_RETURN(
      Statement insert,
      conn().Prepare("INSERT INTO datasets (tenant, id, meta, content) "
                     "VALUES (?1, ?2, ?3, ?4)"));
  insert.BindText(1, tenant);
  insert.BindText(2, stored.id());
  insert.BindBlob(3, stored.SerializeAsString());
  insert.BindBlob(4, content);
  SPARROW_RETURN_IF_ERROR(insert.Run());
  SPARROW_RETURN_IF_ERROR(txn.Commit());
  return stored;
}

absl::StatusOr<v1::Dataset> SqlStore::GetDataset(const std::string& tenant,
                                                 const std::string& id) {
  Session session(&pool_);
  SPARROW_ASSIGN_OR_RETURN(std::optional<v1::Dataset> meta,
                           FindDataset(tenant, id));
  if (!meta.has_value()) return DatasetNotFound(id);
  return *std::move(meta);
}

absl::StatusOr<std::string> SqlStore::GetDatasetContent(
    const std::string& tenant, const std::string& id) {
  Session session(&pool_);
  SPARROW_ASSIGN_OR_RETURN(
      std::optional<std::string> content,
      DatasetBlob("SELECT content FROM datasets WHERE tenant = ?1 AND id = ?2",
                  tenant, id));
  if (!content.has_value()) return DatasetNotFound(id);
  return *std::move(content);
}

absl::StatusOr<Page<v1::Dataset>> SqlStore::ListDatasets(
    const std::string& tenant, int page_size, const std::string& page_token) {
  SPARROW_RETURN_IF_ERROR(CheckPageSize(page_size));
  SPARROW_ASSIGN_OR_RETURN(int64_t after,
                           DecodePageToken("datasets", page_token));
  Session session(&pool_);
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      conn().Prepare("SELECT seq, id, meta FROM datasets "
                     "WHERE tenant = ?1 AND seq > ?2 ORDER BY seq"));
  select.BindText(1, tenant);
  select.BindInt64(2, after);
  return ReadPage<v1::Dataset>(select, "datasets", page_size,
                               absl::StrCat("dataset of tenant ", tenant));
}

namespace {

bool ReadsDataset(const v1::JobSpec& spec, const std::string& id) {
  return spec.data().dataset_id() == id ||
         (spec.has_validation_data() &&
          spec.validation_data().dataset_id() == id) ||
         (spec.has_test_data() && spec.test_data().dataset_id() == id);
}

}  // namespace

// FAILED_PRECONDITION naming the first QUEUED, RUNNING or CANCELLING job that
// reads the dataset: as data (the indexed dataset_id column) or as its
// validation or test record (in the job's spec).
absl::Status SqlStore::CheckDatasetUnused(const std::string& tenant,
                                          const std::string& id) {
  SPARROW_ASSIGN_OR_RETURN(
      Statement active,
      conn().Prepare("SELECT id, state, dataset_id, job FROM jobs "
                     "WHERE tenant = ?1 AND state IN (?2, ?3, ?4) "
                     "ORDER BY seq"));
  active.BindText(1, tenant);
  active.BindInt64(2, v1::Job::QUEUED);
  active.BindInt64(3, v1::Job::RUNNING);
  active.BindInt64(4, v1::Job::CANCELLING);
  while (true) {
    SPARROW_ASSIGN_OR_RETURN(bool row, active.Step());
    if (!row) return absl::OkStatus();
    bool used = active.ColumnString(2) == id;
    if (!used) {
      SPARROW_ASSIGN_OR_RETURN(
          const v1::Job job,
          Parse<v1::Job>(active.ColumnBytes(3),
                         absl::StrCat("job ", active.ColumnBytes(0))));
      used = ReadsDataset(job.spec(), id);
    }
    if (used) {
      const auto state = static_cast<v1::Job::State>(active.ColumnInt64(1));
      return absl::FailedPreconditionError(absl::StrCat(
          "dataset ", id, " is in use by job ", active.ColumnBytes(0),
          ", which is ", v1::Job::State_Name(state),
          "; delete the dataset after the job has finished"));
    }
  }
}

absl::Status SqlStore::DeleteDataset(const std::string& tenant,
                                     const std::string& id) {
  Session session(&pool_);
  Transaction txn(&conn());
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
  SPARROW_RETURN_IF_ERROR(CheckDatasetUnused(tenant, id));
  SPARROW_ASSIGN_OR_RETURN(
      Statement remove,
      conn().Prepare("DELETE FROM datasets WHERE tenant = ?1 AND id = ?2"));
  remove.BindText(1, tenant);
  remove.BindText(2, id);
  SPARROW_RETURN_IF_ERROR(remove.Run());
  if (remove.changes() == 0) return DatasetNotFound(id);
  return txn.Commit();
}

}  // namespace sparrow::server::sql
