// The Store on PostgreSQL: one connection guarded by a mutex, write
// transactions SERIALIZABLE, protos stored serialized in BYTEA columns (the
// same tables as SQLite's, below). This file connects and creates or checks
// the schema; the Store's calls are SqlStore's (internal/sql_store.h).
//
// BYTEA, not large objects, for datasets, checkpoints and models: a BYTEA
// value is part of its row, so it is written and rolled back with the row,
// deleted by ON DELETE CASCADE and dumped by a plain pg_dump; large objects
// would need their own cleanup and `pg_dump --blobs`. Uploads are limited far
// below BYTEA's 1 GB (--max-upload-bytes).
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "server/store/internal/pg_db.h"
#include "server/store/internal/sql_db.h"
#include "server/store/internal/sql_store.h"
#include "server/store/store.h"

namespace sparrow::server {
namespace {

using pg::Connection;
using Transaction = sql::BasicTransaction<pg::Connection>;

// The schema version this sparrowd writes (PostgreSQL's own numbering,
// kept in the table sparrow_schema); a later schema migrates from it.
constexpr int kSchemaVersion = 1;

constexpr char kSchema[] = R"sql(
CREATE TABLE datasets (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- upload order
  tenant TEXT NOT NULL,
  id TEXT NOT NULL,
  meta BYTEA NOT NULL,                    -- sparrow.v1.Dataset
  content BYTEA NOT NULL,
  UNIQUE (tenant, id)
);
CREATE TABLE jobs (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- submission order
  id TEXT NOT NULL UNIQUE,
  tenant TEXT NOT NULL,
  request_id TEXT,                        -- NULL when the job has none
  state INTEGER NOT NULL,                 -- = job.state
  dataset_id TEXT,                        -- = job.spec.data.dataset_id or NULL
  job BYTEA NOT NULL                      -- sparrow.v1.Job
);
CREATE UNIQUE INDEX jobs_by_request_id
  ON jobs (tenant, request_id) WHERE request_id IS NOT NULL;
CREATE INDEX jobs_by_tenant ON jobs (tenant, seq);
CREATE INDEX jobs_by_tenant_state ON jobs (tenant, state, seq);
CREATE INDEX jobs_by_state ON jobs (state, seq);
CREATE TABLE events (
  job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  seq BIGINT NOT NULL,
  event BYTEA NOT NULL,                   -- sparrow.v1.ProgressEvent
  PRIMARY KEY (job_id, seq)
);
CREATE TABLE series_blocks (
  job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  level INTEGER NOT NULL,
  idx BIGINT NOT NULL,
  block BYTEA NOT NULL,                   -- sparrow.v1.SeriesBlock
  PRIMARY KEY (job_id, level, idx)
);
CREATE TABLE checkpoints (
  job_id TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
  bytes BYTEA NOT NULL,
  update_time BIGINT NOT NULL             -- Unix nanoseconds
);
CREATE TABLE models (
  job_id TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
  model BYTEA NOT NULL                    -- sparrow.v1.TrainedModel
);
)sql";

// Advisory lock keys (any 64-bit numbers of our own): one serializes the
// schema set-up of sparrowds starting together; the other is held by the
// connection for as long as sparrowd runs, so that a second sparrowd on the
// same database is refused until replicas can share one.
constexpr char kSchemaLock[] = "SELECT pg_advisory_xact_lock(7301175400001)";
constexpr char kInstanceLock[] = "SELECT pg_try_advisory_lock(7301175400002)";

absl::Status CreateOrCheckSchema(Connection& connection) {
  Transaction txn(&connection);
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
  SPARROW_RETURN_IF_ERROR(connection.Exec(kSchemaLock));
  SPARROW_RETURN_IF_ERROR(connection.Exec(
      "CREATE TABLE IF NOT EXISTS sparrow_schema (version INTEGER NOT NULL)"));
  int64_t version = 0;
  {
    SPARROW_ASSIGN_OR_RETURN(
        pg::Statement select,
        connection.Prepare("SELECT version FROM sparrow_schema"));
    SPARROW_ASSIGN_OR_RETURN(bool row, select.Step());
    if (row) version = select.ColumnInt64(0);
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("the database ", connection.name(), " has schema version ",
                     version, ", newer than this sparrowd's ", kSchemaVersion,
                     "; run a newer sparrowd"));
  }
  if (version == 0) {
    SPARROW_RETURN_IF_ERROR(connection.Exec(kSchema));
    SPARROW_RETURN_IF_ERROR(connection.Exec(
        absl::StrCat("INSERT INTO sparrow_schema (version) VALUES (",
                     kSchemaVersion, ")")
            .c_str()));
  }
  return txn.Commit();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStore(
    const std::string& uri) {
  SPARROW_ASSIGN_OR_RETURN(Connection connection, Connection::Open(uri));
  SPARROW_ASSIGN_OR_RETURN(bool only_one, connection.QueryBool(kInstanceLock));
  if (!only_one) {
    return absl::FailedPreconditionError(absl::StrCat(
        "another sparrowd is using the database ", connection.name(),
        "; one sparrowd per database (replicas sharing one are not "
        "supported yet): stop the other, or give this one its own database"));
  }
  // Kept through reconnections: a sparrowd that cannot take the lock back
  // stops writing.
  connection.SetSessionCheck(kInstanceLock);
  SPARROW_RETURN_IF_ERROR(CreateOrCheckSchema(connection));
  return std::make_unique<sql::SqlStore>(sql::Adapt(std::move(connection)));
}

}  // namespace sparrow::server
