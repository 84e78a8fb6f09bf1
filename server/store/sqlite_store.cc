// The embedded Store: one SQLite database file, one connection guarded by a
// mutex. Every mutating call is one BEGIN IMMEDIATE ... COMMIT transaction;
// with journal_mode=WAL and synchronous=FULL a commit is on disk when it
// returns. Protos are stored serialized; the columns beside them (state,
// request_id, dataset_id, seq) are copies kept for lookups and ordering.
//
// This file opens the database and creates or migrates its schema; the
// Store's calls are SqlStore's (internal/sql_store.h), shared with
// PostgreSQL.
#include <sqlite3.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/util/status_macros.h"
#include "server/store/internal/sql_store.h"
#include "server/store/internal/sqlite_db.h"
#include "server/store/store.h"

namespace sparrow::server {
namespace {

using sqlite::Connection;
using sqlite::DbHandle;
using sqlite::Statement;
using Transaction = sql::BasicTransaction<sqlite::Connection>;

// PRAGMA user_version of the schema below; a later schema migrates from it.
// Version 2 added series_blocks and Job.Transition.seq.
constexpr int kSchemaVersion = 2;

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS datasets (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- upload order; never reused
  tenant TEXT NOT NULL,
  id TEXT NOT NULL,
  meta BLOB NOT NULL,                     -- sparrow.v1.Dataset
  content BLOB NOT NULL,
  UNIQUE (tenant, id)
);
CREATE TABLE IF NOT EXISTS jobs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- submission order; never reused
  id TEXT NOT NULL UNIQUE,
  tenant TEXT NOT NULL,
  request_id TEXT,                        -- NULL when the job has none
  state INTEGER NOT NULL,                 -- = job.state
  dataset_id TEXT,                        -- = job.spec.data.dataset_id or NULL
  job BLOB NOT NULL                       -- sparrow.v1.Job
);
CREATE UNIQUE INDEX IF NOT EXISTS jobs_by_request_id
  ON jobs (tenant, request_id) WHERE request_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_by_tenant ON jobs (tenant, seq);
CREATE INDEX IF NOT EXISTS jobs_by_tenant_state ON jobs (tenant, state, seq);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, seq);
CREATE TABLE IF NOT EXISTS events (
  job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  event BLOB NOT NULL,                    -- sparrow.v1.ProgressEvent
  PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS series_blocks (
  job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  level INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  block BLOB NOT NULL,                    -- sparrow.v1.SeriesBlock
  PRIMARY KEY (job_id, level, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (
  job_id TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
  bytes BLOB NOT NULL,
  update_time INTEGER NOT NULL            -- Unix nanoseconds
);
CREATE TABLE IF NOT EXISTS models (
  job_id TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
  model BLOB NOT NULL                     -- sparrow.v1.TrainedModel
);
)sql";

// How long a statement waits for a lock held by another connection (another
// process opening the same file) before failing with UNAVAILABLE.
constexpr int kBusyTimeoutMs = 5000;

// Switches to WAL; this is the first statement that reads the file.
absl::Status UseWal(Connection& connection) {
  SPARROW_ASSIGN_OR_RETURN(Statement wal,
                           connection.Prepare("PRAGMA journal_mode = WAL"));
  SPARROW_ASSIGN_OR_RETURN(bool row, wal.Step());
  const std::string mode = row ? wal.ColumnString(0) : "";
  // An in-memory database (for tests) has no journal file to speak of.
  if (mode != "wal" && connection.path() != ":memory:") {
    return absl::UnavailableError(absl::StrCat(
        "store ", connection.path(),
        ": cannot switch to WAL mode (journal_mode is ", mode, ")"));
  }
  return absl::OkStatus();
}

// Sets the connection up and creates (or checks) the schema; *version is the
// schema version the file had (0 when new).
absl::Status Configure(Connection& connection, int64_t* version) {
  SPARROW_RETURN_IF_ERROR(connection.Exec(
      absl::StrCat("PRAGMA busy_timeout = ", kBusyTimeoutMs).c_str()));
  if (absl::Status status = UseWal(connection); !status.ok()) {
    // SQLITE_NOTADB: some other file is at the path.
    if (absl::IsDataLoss(status)) {
      return absl::InvalidArgumentError(absl::StrCat(
          connection.path(), " is not a Sparrow store: ", status.message()));
    }
    return status;
  }
  SPARROW_RETURN_IF_ERROR(connection.Exec("PRAGMA synchronous = FULL"));
  SPARROW_RETURN_IF_ERROR(connection.Exec("PRAGMA foreign_keys = ON"));

  Transaction txn(&connection);
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
  {
    SPARROW_ASSIGN_OR_RETURN(Statement select,
                             connection.Prepare("PRAGMA user_version"));
    SPARROW_ASSIGN_OR_RETURN(bool row, select.Step());
    *version = row ? select.ColumnInt64(0) : 0;
  }
  if (*version > kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("store ", connection.path(), " has schema version ",
                     *version, ", newer than this sparrowd's ", kSchemaVersion,
                     "; run a newer sparrowd"));
  }
  if (*version == 0) {
    SPARROW_RETURN_IF_ERROR(connection.Exec(kSchema));
    SPARROW_RETURN_IF_ERROR(connection.Exec(
        absl::StrCat("PRAGMA user_version = ", kSchemaVersion).c_str()));
  }
  return txn.Commit();
}

// Writes and commits one row, so that a store sparrowd cannot write (a
// read-only file or directory, a full disk) fails at start-up instead of on
// the first client's call after the server reported SERVING.
absl::Status ProbeWrite(Connection& connection) {
  Transaction txn(&connection);
  absl::Status s = txn.Begin(Transaction::kWrite);
  if (s.ok()) {
    s = connection.Exec(
        "CREATE TABLE IF NOT EXISTS write_probe (at INTEGER NOT NULL);"
        "DELETE FROM write_probe;");
  }
  if (s.ok()) {
    s = connection.Exec(absl::StrCat("INSERT INTO write_probe (at) VALUES (",
                                     absl::ToUnixNanos(absl::Now()), ")")
                            .c_str());
  }
  if (s.ok()) s = txn.Commit();
  return s;
}

// The start-up error for a store that cannot be opened for writing, with
// what to check.
absl::Status Unwritable(const std::string& path, const absl::Status& cause) {
  return absl::Status(
      cause.code(),
      absl::StrCat(
          "the store ", path, " cannot be written (", cause.message(),
          "); check that the user running sparrowd may write that file, its "
          "directory and the -wal and -shm files beside it (ownership, "
          "permissions, a read-only mount), and that the disk has free space"));
}

// SQLite has one writer at a time: one connection serves every call.
std::vector<sql::Connection> One(Connection connection) {
  std::vector<sql::Connection> connections;
  connections.push_back(sql::Adapt(std::move(connection)));
  return connections;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(
    const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("the store's path is empty");
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &raw,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  DbHandle db(raw);  // closed on every path, also when the open failed
  if (rc != SQLITE_OK) {
    return Unwritable(
        path, absl::UnavailableError(absl::StrCat(
                  "cannot open it: ", db != nullptr ? sqlite3_errmsg(db.get())
                                                    : sqlite3_errstr(rc))));
  }
  sqlite3_extended_result_codes(db.get(), 1);
  Connection connection(std::move(db), path);
  int64_t version = 0;
  absl::Status s = Configure(connection, &version);
  if (s.ok()) s = ProbeWrite(connection);
  if (absl::IsUnavailable(s) || absl::IsResourceExhausted(s)) {
    return Unwritable(path, s);
  }
  SPARROW_RETURN_IF_ERROR(s);
  auto store =
      std::make_unique<sql::SqlStore>(One(std::move(connection)), false);
  if (version > 0 && version < kSchemaVersion) {
    s = store->Migrate(
        kSchema,
        absl::StrCat("PRAGMA user_version = ", kSchemaVersion).c_str());
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("the store ", path,
                                                 " cannot be migrated from "
                                                 "schema version ",
                                                 version, ": ", s.message()));
    }
  }
  return store;
}

}  // namespace sparrow::server
