// The Store on PostgreSQL: a few connections, READ COMMITTED transactions
// that lock the job row they change (retried on a deadlock or a unique key
// another replica inserted meanwhile),
// protos stored serialized in BYTEA columns (the tables of SQLite's, plus
// what replicas claim jobs by, below). This file connects, creates or
// migrates the schema and listens to the other replicas; the Store's calls
// are SqlStore's (internal/sql_store.h, the claims in sql_leases.cc).
//
// BYTEA, not large objects, for datasets, checkpoints and models: a BYTEA
// value is part of its row, so it is written and rolled back with the row,
// deleted by ON DELETE CASCADE and dumped by a plain pg_dump; large objects
// would need their own cleanup and `pg_dump --blobs`. Uploads are limited far
// below BYTEA's 1 GB (--max-upload-bytes).
#include <poll.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/util/status_macros.h"
#include "server/store/internal/pg_db.h"
#include "server/store/internal/sql_db.h"
#include "server/store/internal/sql_store.h"
#include "server/store/store.h"
#include "spdlog/spdlog.h"

namespace sparrow::server {
namespace {

using pg::Connection;
using Transaction = sql::BasicTransaction<pg::Connection>;

// The schema version this sparrowd writes (PostgreSQL's own numbering,
// kept in the table sparrow_schema); a later schema migrates from it.
constexpr int kSchemaVersion = 2;

// Connections of one sparrowd (plus its listener's): enough that a Submit
// or a watcher's read does not wait behind a running job's event writes;
// few enough that many replicas stay far below PostgreSQL's default
// max_connections (100).
constexpr size_t kConnections = 4;

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
  job BYTEA NOT NULL,                     -- sparrow.v1.Job
  priority INTEGER NOT NULL DEFAULT 0,    -- = job.priority
  memory BIGINT NOT NULL DEFAULT 0,       -- = job.memory_estimate_bytes
  -- A RUNNING job's replica (= job.replica) holds it until lease_expires
  -- (by the database's clock).
  replica TEXT,
  lease_expires TIMESTAMPTZ NOT NULL DEFAULT '-infinity'
);
CREATE UNIQUE INDEX jobs_by_request_id
  ON jobs (tenant, request_id) WHERE request_id IS NOT NULL;
CREATE INDEX jobs_by_tenant ON jobs (tenant, seq);
CREATE INDEX jobs_by_tenant_state ON jobs (tenant, state, seq);
CREATE INDEX jobs_by_state ON jobs (state, seq);
CREATE INDEX jobs_to_claim ON jobs (state, priority DESC, seq);
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

// Version 1 -> 2: the columns replicas claim jobs by. The priority of the
// jobs still to run is copied from their records (MigrateV1Priorities).
constexpr char kMigrateV1[] = R"sql(
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN memory BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN replica TEXT;
ALTER TABLE jobs ADD COLUMN lease_expires TIMESTAMPTZ NOT NULL
  DEFAULT '-infinity';
CREATE INDEX jobs_to_claim ON jobs (state, priority DESC, seq);
)sql";

// An advisory lock key (any 64-bit number of our own): serializes the schema
// set-up and migrations of replicas starting together.
constexpr char kSchemaLock[] = "SELECT pg_advisory_xact_lock(7301175400001)";

absl::Status MigrateV1Priorities(Connection& connection) {
  SPARROW_ASSIGN_OR_RETURN(
      pg::Statement select,
      connection.Prepare("SELECT id, job FROM jobs WHERE state IN (1, 2, 3)"));
  std::vector<std::pair<std::string, int32_t>> priorities;
  while (true) {
    SPARROW_ASSIGN_OR_RETURN(bool row, select.Step());
    if (!row) break;
    v1::Job job;
    const absl::string_view bytes = select.ColumnBytes(1);
    if (job.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) &&
        job.priority() != 0) {
      priorities.emplace_back(select.ColumnString(0), job.priority());
    }
  }
  for (const auto& [id, priority] : priorities) {
    SPARROW_ASSIGN_OR_RETURN(
        pg::Statement update,
        connection.Prepare("UPDATE jobs SET priority = ?2 WHERE id = ?1"));
    update.BindText(1, id);
    update.BindInt64(2, priority);
    SPARROW_RETURN_IF_ERROR(update.Run());
  }
  return absl::OkStatus();
}

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
  } else if (version == 1) {
    SPARROW_RETURN_IF_ERROR(connection.Exec(kMigrateV1));
    SPARROW_RETURN_IF_ERROR(MigrateV1Priorities(connection));
    SPARROW_RETURN_IF_ERROR(connection.Exec(
        absl::StrCat("UPDATE sparrow_schema SET version = ", kSchemaVersion)
            .c_str()));
  }
  return txn.Commit();
}

// The shared store: SqlStore, plus the listener for the other replicas'
// NOTIFYs on a connection of its own.
class PgStore final : public sql::SqlStore {
 public:
  PgStore(std::vector<sql::Connection> connections, std::string uri)
      : SqlStore(std::move(connections), /*shared=*/true),
        uri_(std::move(uri)) {}

  absl::Status Listen(
      const std::function<void(const std::string&, int64_t)>& on_change,
      const std::atomic<bool>& stop) override;

 private:
  // Listens on one connection until it breaks (an error) or stop is set.
  absl::Status ListenOnce(
      Connection& connection,
      const std::function<void(const std::string&, int64_t)>& on_change,
      const std::atomic<bool>& stop);

  const std::string uri_;
};

// Waits at most `ms` for the connection's socket to have input.
void AwaitInput(PGconn* conn, int ms) {
  pollfd fd{PQsocket(conn), POLLIN, 0};
  poll(&fd, 1, ms);
}

absl::Status PgStore::Listen(
    const std::function<void(const std::string&, int64_t)>& on_change,
    const std::atomic<bool>& stop) {
  bool first = true;
  while (!stop.load()) {
    auto connection = Connection::Open(uri_);
    absl::Status s = connection.status();
    if (s.ok()) s = connection->Exec("LISTEN sparrow_events");
    if (s.ok()) {
      // Whatever was committed while no one listened is found by waking
      // everyone: watchers read the events table, the truth.
      if (!first) on_change("", 0);
      first = false;
      s = ListenOnce(*connection, on_change, stop);
      if (s.ok()) return s;
    }
    spdlog::warn("store: not listening to the other replicas ({}); retrying",
                 std::string(s.message()));
    for (int i = 0; i < 5 && !stop.load(); ++i) {
      absl::SleepFor(absl::Milliseconds(200));
    }
  }
  return absl::OkStatus();
}

absl::Status PgStore::ListenOnce(
    Connection& connection,
    const std::function<void(const std::string&, int64_t)>& on_change,
    const std::atomic<bool>& stop) {
  PGconn* conn = connection.get();
  while (!stop.load()) {
    AwaitInput(conn, 200);
    if (PQconsumeInput(conn) == 0) return connection.Error(nullptr, "LISTEN");
    while (PGnotify* n = PQnotifies(conn)) {
      const absl::string_view payload(n->extra);
      const size_t space = payload.rfind(' ');
      int64_t seq = 0;
      if (space != absl::string_view::npos &&
          absl::SimpleAtoi(payload.substr(space + 1), &seq)) {
        on_change(std::string(payload.substr(0, space)), seq);
      }
      PQfreemem(n);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStore(
    const std::string& uri) {
  SPARROW_ASSIGN_OR_RETURN(Connection first, Connection::Open(uri));
  SPARROW_RETURN_IF_ERROR(CreateOrCheckSchema(first));
  std::vector<sql::Connection> connections;
  connections.push_back(sql::Adapt(std::move(first)));
  while (connections.size() < kConnections) {
    SPARROW_ASSIGN_OR_RETURN(Connection more, Connection::Open(uri));
    connections.push_back(sql::Adapt(std::move(more)));
  }
  return std::make_unique<PgStore>(std::move(connections), uri);
}

}  // namespace sparrow::server
