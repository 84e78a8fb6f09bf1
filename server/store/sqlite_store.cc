// The embedded Store: one SQLite database file, one connection guarded by a
// mutex. Every mutating call is one BEGIN IMMEDIATE ... COMMIT transaction;
// with journal_mode=WAL and synchronous=FULL a commit is on disk when it
// returns. Protos are stored serialized; the columns beside them (state,
// request_id, dataset_id, seq) are copies kept for lookups and ordering.
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/util/status_macros.h"
#include "google/protobuf/timestamp.pb.h"
#include "google/protobuf/util/time_util.h"
#include "server/internal_error.h"
#include "server/store/store.h"
#include "spdlog/spdlog.h"
#include "translate/legacy_spec_namespace.h"
#include "translate/text.h"

namespace sparrow::server {
namespace {

// PRAGMA user_version of the schema below; a later schema migrates from it.
constexpr int kSchemaVersion = 1;

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

// What a client is told when the store fails (server/internal_error.h).
constexpr char kStoreBusy[] =
    "the server's store is busy; nothing was changed; retry in a moment";
constexpr char kStoreUnwritable[] =
    "the server cannot write to its store; nothing was changed; retry later, "
    "and if it persists ask the server's operator to check that sparrowd may "
    "write its --data-dir";
constexpr char kStoreFull[] =
    "the server's disk is full; nothing was changed; retry after its "
    "operator has freed space";
constexpr char kStoreTooBig[] =
    "the item is too large for the server's store; nothing was changed";
constexpr char kStoreDamaged[] =
    "the server's store is damaged; nothing was changed; report this to the "
    "server's operator";
constexpr char kStoreFailed[] =
    "the server's store failed; nothing was changed; retry, and report it to "
    "the server's operator if it persists";

constexpr char kBadPageToken[] = "page_token is not a token this server issued";

google::protobuf::Timestamp ToTimestamp(absl::Time t) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
      absl::ToUnixNanos(t));
}

bool IsFinal(v1::Job::State state) {
  return state == v1::Job::SUCCEEDED || state == v1::Job::FAILED ||
         state == v1::Job::CANCELLED;
}

template <typename Message>
absl::StatusOr<Message> Parse(absl::string_view bytes, absl::string_view row) {
  Message message;
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(
        absl::StrCat("the store's record of ", row, " is corrupt (not a ",
                     Message::descriptor()->full_name(), ")"));
  }
  return message;
}

// Page tokens are web-safe base64 of "<listing>:<seq of the last item>", so a
// token of one listing (or filter) is refused by another.
std::string EncodePageToken(absl::string_view listing, int64_t last_seq) {
  return absl::WebSafeBase64Escape(absl::StrCat(listing, ":", last_seq));
}

// The seq after which the page starts: 0 for an empty token.
absl::StatusOr<int64_t> DecodePageToken(absl::string_view listing,
                                        const std::string& token) {
  if (token.empty()) return 0;
  std::string raw;
  int64_t last_seq = 0;
  absl::string_view rest;
  if (absl::WebSafeBase64Unescape(token, &raw)) rest = raw;
  if (!absl::ConsumePrefix(&rest, absl::StrCat(listing, ":")) ||
      !absl::SimpleAtoi(rest, &last_seq) || last_seq <= 0) {
    return absl::InvalidArgumentError(kBadPageToken);
  }
  return last_seq;
}

absl::Status CheckPageSize(int page_size) {
  if (page_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size must be positive, got ", page_size));
  }
  return absl::OkStatus();
}

// ---- RAII wrappers over the C API -------------------------------------------

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbHandle = std::unique_ptr<sqlite3, DbCloser>;

class Connection;

// A prepared statement. Bind errors (e.g. a blob over SQLite's size limit) are
// kept and returned by the next Step.
class Statement {
 public:
  Statement(Connection* connection, sqlite3_stmt* stmt)
      : connection_(connection), stmt_(stmt) {}
  Statement(Statement&& other) noexcept
      : connection_(other.connection_),
        stmt_(std::exchange(other.stmt_, nullptr)),
        bind_status_(std::move(other.bind_status_)) {}
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& operator=(Statement&&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  // Parameters are numbered from 1. Text and blobs are copied.
  void BindInt64(int i, int64_t value) {
    Check(sqlite3_bind_int64(stmt_, i, value));
  }
  void BindText(int i, absl::string_view value) {
    // A null pointer would bind NULL; "" keeps an empty string a string.
    Check(sqlite3_bind_text64(stmt_, i, value.empty() ? "" : value.data(),
                              value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  }
  // Binds NULL for an empty value.
  void BindTextOrNull(int i, absl::string_view value) {
    if (value.empty()) {
      Check(sqlite3_bind_null(stmt_, i));
    } else {
      BindText(i, value);
    }
  }
  void BindBlob(int i, absl::string_view value) {
    Check(sqlite3_bind_blob64(stmt_, i, value.empty() ? "" : value.data(),
                              value.size(), SQLITE_TRANSIENT));
  }

  // True when a row is available, false when the statement is done.
  absl::StatusOr<bool> Step();
  // Steps a statement that returns no rows.
  absl::Status Run() {
    SPARROW_ASSIGN_OR_RETURN(bool row, Step());
    if (row) return absl::InternalError("statement unexpectedly returned rows");
    return absl::OkStatus();
  }
  // Makes the statement ready to be bound and stepped again.
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  int64_t ColumnInt64(int col) { return sqlite3_column_int64(stmt_, col); }
  // Text and blob columns alike; valid until the next Step or Reset.
  absl::string_view ColumnBytes(int col) {
    const void* data = sqlite3_column_blob(stmt_, col);
    const int size = sqlite3_column_bytes(stmt_, col);
    if (data == nullptr) return absl::string_view();
    return absl::string_view(static_cast<const char*>(data), size);
  }
  std::string ColumnString(int col) { return std::string(ColumnBytes(col)); }

 private:
  void Check(int rc);

  Connection* connection_;
  sqlite3_stmt* stmt_;
  absl::Status bind_status_;
};

class Connection {
 public:
  Connection(DbHandle db, std::string path)
      : db_(std::move(db)), path_(std::move(path)) {}

  const std::string& path() const { return path_; }

  // An error for result code rc of `what`, naming the store's path.
  absl::Status Error(int rc, absl::string_view what) const {
    // sqlite3_errmsg describes the last failure on this connection, which is
    // rc unless rc came from a bind (where it may describe an older one).
    const char* detail = sqlite3_extended_errcode(db_.get()) == rc
                             ? sqlite3_errmsg(db_.get())
                             : sqlite3_errstr(rc);
    const std::string message =
        absl::StrCat("store ", path_, ": ", what, ": ", detail);
    // The path and the SQL are for the log; clients get ClientMessage's.
    switch (rc & 0xff) {
      case SQLITE_BUSY:
      case SQLITE_LOCKED:
      case SQLITE_PROTOCOL:
        return WithClientMessage(absl::UnavailableError(message), kStoreBusy);
      case SQLITE_IOERR:
      case SQLITE_CANTOPEN:
      case SQLITE_READONLY:
        return WithClientMessage(absl::UnavailableError(message),
                                 kStoreUnwritable);
      case SQLITE_FULL:
        return WithClientMessage(absl::ResourceExhaustedError(message),
                                 kStoreFull);
      case SQLITE_TOOBIG:
        return WithClientMessage(absl::ResourceExhaustedError(message),
                                 kStoreTooBig);
      case SQLITE_CORRUPT:
      case SQLITE_NOTADB:
        return WithClientMessage(absl::DataLossError(message), kStoreDamaged);
      default:
        return WithClientMessage(absl::InternalError(message), kStoreFailed);
    }
  }

  absl::StatusOr<Statement> Prepare(absl::string_view sql) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v2(
        db_.get(), sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(stmt);
      return Error(rc, absl::StrCat("preparing \"", sql, "\""));
    }
    return Statement(this, stmt);
  }

  // Runs one or more statements that return nothing of interest.
  absl::Status Exec(const char* sql) {
    const int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return Error(rc, sql);
    return absl::OkStatus();
  }

  bool InTransaction() const { return !sqlite3_get_autocommit(db_.get()); }

  int changes() const { return sqlite3_changes(db_.get()); }

 private:
  DbHandle db_;
  std::string path_;
};

absl::StatusOr<bool> Statement::Step() {
  SPARROW_RETURN_IF_ERROR(bind_status_);
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return connection_->Error(rc, sqlite3_sql(stmt_));
}

void Statement::Check(int rc) {
  if (rc != SQLITE_OK && bind_status_.ok()) {
    bind_status_ = connection_->Error(
        rc, absl::StrCat("binding a parameter of ", sqlite3_sql(stmt_)));
  }
}

// One page of a listing from `select`, whose rows are (seq, id, serialized
// Message) in seq order after the token's seq. A record that cannot be parsed
// (e.g. a name that is not UTF-8, stored by an older sparrowd) is logged and
// left out: one bad row must not hide the rest of the list.
template <typename Message>
absl::StatusOr<Page<Message>> ReadPage(Statement& select,
                                       absl::string_view listing, int page_size,
                                       absl::string_view what) {
  Page<Message> page;
  int64_t last_seq = 0;
  while (true) {
    SPARROW_ASSIGN_OR_RETURN(bool row, select.Step());
    if (!row) break;
    if (static_cast<int>(page.items.size()) == page_size) {
      page.next_page_token = EncodePageToken(listing, last_seq);
      break;
    }
    last_seq = select.ColumnInt64(0);
    auto item = Parse<Message>(select.ColumnBytes(2),
                               absl::StrCat(what, " ", select.ColumnBytes(1)));
    if (!item.ok()) {
      spdlog::error("store: {} left out of a listing: {}", std::string(listing),
                    std::string(item.status().message()));
      continue;
    }
    page.items.push_back(*std::move(item));
  }
  return page;
}

// A transaction that rolls back unless committed. kWrite takes the write lock
// up front (BEGIN IMMEDIATE) so that a read-then-write never fails half-way
// on a lock upgrade.
class Transaction {
 public:
  enum Mode { kRead, kWrite };

  explicit Transaction(Connection* connection) : connection_(connection) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() {
    // SQLite rolls back by itself after some errors (e.g. SQLITE_FULL).
    if (begun_ && connection_->InTransaction()) {
      connection_->Exec("ROLLBACK").IgnoreError();
    }
  }

  absl::Status Begin(Mode mode) {
    SPARROW_RETURN_IF_ERROR(
        connection_->Exec(mode == kWrite ? "BEGIN IMMEDIATE" : "BEGIN"));
    begun_ = true;
    return absl::OkStatus();
  }
  absl::Status Commit() {
    SPARROW_RETURN_IF_ERROR(connection_->Exec("COMMIT"));
    begun_ = false;
    return absl::OkStatus();
  }

 private:
  Connection* connection_;
  bool begun_ = false;
};

// ---- the store
// ----------------------------------------------------------------

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(Connection connection)
      : connection_(std::move(connection)) {}

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
      const std::string& job_id,
      std::vector<v1::ProgressEvent> events) override;
  absl::StatusOr<std::vector<v1::ProgressEvent>> ListEvents(
      const std::string& job_id, int64_t after_seq, int limit) override;

  absl::Status PutCheckpoint(const std::string& job_id,
                             absl::string_view bytes) override;
  absl::StatusOr<std::optional<std::string>> GetCheckpoint(
      const std::string& job_id) override;
  absl::StatusOr<v1::TrainedModel> GetModel(const std::string& job_id) override;

 private:
  // The helpers below run inside the caller's lock (and transaction).
  absl::StatusOr<std::optional<v1::Dataset>> FindDataset(
      const std::string& tenant, const std::string& id);
  absl::StatusOr<JobRecord> LoadJob(const std::string& id);
  absl::StatusOr<std::optional<v1::Job>> FindByRequestId(
      const std::string& tenant, const std::string& request_id);
  // The one-row blob `select_sql` (with ?1 = job_id) reads for a job that
  // exists (NOT_FOUND otherwise); empty when there is no row. Takes the lock.
  absl::StatusOr<std::optional<std::string>> JobBlob(const std::string& job_id,
                                                     const char* select_sql);
  absl::Status InsertJob(const std::string& tenant, const v1::Job& job);
  absl::Status UpdateJob(const v1::Job& job);
  absl::Status InsertEvent(Statement& insert, const v1::ProgressEvent& event);

  // One connection, used by one call at a time.
  std::mutex mu_;
  Connection connection_;
};

absl::Status DatasetNotFound(const std::string& id) {
  return absl::NotFoundError(
      absl::StrCat("dataset ", spec::ForMessage(id), " not found"));
}

absl::Status JobNotFound(const std::string& id) {
  return absl::NotFoundError(
      absl::StrCat("job ", spec::ForMessage(id), " not found"));
}

absl::StatusOr<std::optional<v1::Dataset>> SqliteStore::FindDataset(
    const std::string& tenant, const std::string& id) {
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      connection_.Prepare(
          "SELECT meta FROM datasets WHERE tenant = ?1 AND id = ?2"));
  select.BindText(1, tenant);
  select.BindText(2, id);
  SPARROW_ASSIGN_OR_RETURN(bool found, select.Step());
  if (!found) return std::nullopt;
  SPARROW_ASSIGN_OR_RETURN(
      v1::Dataset meta,
      Parse<v1::Dataset>(select.ColumnBytes(0),
                         absl::StrCat("dataset ", id, " of tenant ", tenant)));
  return meta;
}

absl::StatusOr<v1::Dataset> SqliteStore::PutDataset(const std::string& tenant,
                                                    const v1::Dataset& meta,
                                                    absl::string_view content,
                                                    bool* already_existed) {
  if (already_existed != nullptr) *already_existed = false;
  if (meta.id().empty()) {
    return absl::InvalidArgumentError("dataset id is empty");
  }
  std::lock_guard<std::mutex> lock(mu_);
  Transaction txn(&connection_);
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
      connection_.Prepare("INSERT INTO datasets (tenant, id, meta, content) "
                          "VALUES (?1, ?2, ?3, ?4)"));
  insert.BindText(1, tenant);
  insert.BindText(2, stored.id());
  insert.BindBlob(3, stored.SerializeAsString());
  insert.BindBlob(4, content);
  SPARROW_RETURN_IF_ERROR(insert.Run());
  SPARROW_RETURN_IF_ERROR(txn.Commit());
  return stored;
}

absl::StatusOr<v1::Dataset> SqliteStore::GetDataset(const std::string& tenant,
                                                    const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  SPARROW_ASSIGN_OR_RETURN(std::optional<v1::Dataset> meta,
                           FindDataset(tenant, id));
  if (!meta.has_value()) return DatasetNotFound(id);
  return *std::move(meta);
}

absl::StatusOr<std::string> SqliteStore::GetDatasetContent(
    const std::string& tenant, const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      connection_.Prepare(
          "SELECT content FROM datasets WHERE tenant = ?1 AND id = ?2"));
  select.BindText(1, tenant);
  select.BindText(2, id);
  SPARROW_ASSIGN_OR_RETURN(bool found, select.Step());
  if (!found) return DatasetNotFound(id);
  return select.ColumnString(0);
}

absl::StatusOr<Page<v1::Dataset>> SqliteStore::ListDatasets(
    const std::string& tenant, int page_size, const std::string& page_token) {
  SPARROW_RETURN_IF_ERROR(CheckPageSize(page_size));
  SPARROW_ASSIGN_OR_RETURN(int64_t after,
                           DecodePageToken("datasets", page_token));
  std::lock_guard<std::mutex> lock(mu_);
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      connection_.Prepare("SELECT seq, id, meta FROM datasets "
                          "WHERE tenant = ?1 AND seq > ?2 ORDER BY seq"));
  select.BindText(1, tenant);
  select.BindInt64(2, after);
  return ReadPage<v1::Dataset>(select, "datasets", page_size,
                               absl::StrCat("dataset of tenant ", tenant));
}

absl::Status SqliteStore::DeleteDataset(const std::string& tenant,
                                        const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction txn(&connection_);
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
  {
    SPARROW_ASSIGN_OR_RETURN(
        Statement user,
        connection_.Prepare("SELECT id, state FROM jobs "
                            "WHERE tenant = ?1 AND dataset_id = ?2 "
                            "AND state IN (?3, ?4, ?5) ORDER BY seq LIMIT 1"));
    user.BindText(1, tenant);
    user.BindText(2, id);
    user.BindInt64(3, v1::Job::QUEUED);
    user.BindInt64(4, v1::Job::RUNNING);
    user.BindInt64(5, v1::Job::CANCELLING);
    SPARROW_ASSIGN_OR_RETURN(bool used, user.Step());
    if (used) {
      const auto state = static_cast<v1::Job::State>(user.ColumnInt64(1));
      return absl::FailedPreconditionError(absl::StrCat(
          "dataset ", id, " is in use by job ", user.ColumnBytes(0),
          ", which is ", v1::Job::State_Name(state),
          "; delete the dataset after the job has finished"));
    }
  }
  SPARROW_ASSIGN_OR_RETURN(
      Statement remove,
      connection_.Prepare(
          "DELETE FROM datasets WHERE tenant = ?1 AND id = ?2"));
  remove.BindText(1, tenant);
  remove.BindText(2, id);
  SPARROW_RETURN_IF_ERROR(remove.Run());
  if (connection_.changes() == 0) return DatasetNotFound(id);
  return txn.Commit();
}

// ---- jobs -------------------------------------------------------------------

absl::StatusOr<JobRecord> SqliteStore::LoadJob(const std::string& id) {
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      connection_.Prepare("SELECT tenant, job FROM jobs WHERE id = ?1"));
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

absl::Status SqliteStore::InsertJob(const std::string& tenant,
                                    const v1::Job& job) {
  SPARROW_ASSIGN_OR_RETURN(
      Statement insert,
      connection_.Prepare(
          "INSERT INTO jobs (id, tenant, request_id, state, dataset_id, job) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  insert.BindText(1, job.id());
  insert.BindText(2, tenant);
  insert.BindTextOrNull(3, job.request_id());
  insert.BindInt64(4, job.state());
  insert.BindTextOrNull(5, job.spec().data().dataset_id());
  insert.BindBlob(6, job.SerializeAsString());
  return insert.Run();
}

absl::Status SqliteStore::UpdateJob(const v1::Job& job) {
  SPARROW_ASSIGN_OR_RETURN(
      Statement update,
      connection_.Prepare(
          "UPDATE jobs SET state = ?2, job = ?3 WHERE id = ?1"));
  update.BindText(1, job.id());
  update.BindInt64(2, job.state());
  update.BindBlob(3, job.SerializeAsString());
  SPARROW_RETURN_IF_ERROR(update.Run());
  if (connection_.changes() != 1) return JobNotFound(job.id());
  return absl::OkStatus();
}

absl::Status SqliteStore::InsertEvent(Statement& insert,
                                      const v1::ProgressEvent& event) {
  insert.Reset();
  insert.BindText(1, event.job_id());
  insert.BindInt64(2, event.seq());
  insert.BindBlob(3, event.SerializeAsString());
  return insert.Run();
}

constexpr char kInsertEvent[] =
    "INSERT INTO events (job_id, seq, event) VALUES (?1, ?2, ?3)";

absl::StatusOr<v1::Job> SqliteStore::CreateJob(const std::string& tenant,
                                               const v1::Job& job,
                                               bool* already_existed) {
  if (already_existed != nullptr) *already_existed = false;
  if (job.id().empty()) return absl::InvalidArgumentError("job id is empty");
  std::lock_guard<std::mutex> lock(mu_);
  Transaction txn(&connection_);
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
        Statement select,
        connection_.Prepare("SELECT 1 FROM jobs WHERE id = ?1"));
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
  stored.set_last_seq(1);

  v1::ProgressEvent event;
  event.set_job_id(stored.id());
  event.set_seq(1);
  event.set_kind(v1::ProgressEvent::STATE);
  *event.mutable_time() = now;
  event.set_state(v1::Job::QUEUED);
  event.set_reason(kReason);

  SPARROW_RETURN_IF_ERROR(InsertJob(tenant, stored));
  SPARROW_ASSIGN_OR_RETURN(Statement insert, connection_.Prepare(kInsertEvent));
  SPARROW_RETURN_IF_ERROR(InsertEvent(insert, event));
  SPARROW_RETURN_IF_ERROR(txn.Commit());
  return stored;
}

absl::StatusOr<JobRecord> SqliteStore::GetJob(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoadJob(id);
}

absl::StatusOr<std::optional<v1::Job>> SqliteStore::FindJobByRequestId(
    const std::string& tenant, const std::string& request_id) {
  if (request_id.empty()) return std::optional<v1::Job>();
  std::lock_guard<std::mutex> lock(mu_);
  return FindByRequestId(tenant, request_id);
}

absl::StatusOr<std::optional<v1::Job>> SqliteStore::FindByRequestId(
    const std::string& tenant, const std::string& request_id) {
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      connection_.Prepare("SELECT id, job FROM jobs "
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

absl::StatusOr<Page<v1::Job>> SqliteStore::ListJobs(
    const std::string& tenant, v1::Job::State state, int page_size,
    const std::string& page_token) {
  SPARROW_RETURN_IF_ERROR(CheckPageSize(page_size));
  // The filter is part of the token: a token is only good for its filter.
  const std::string listing = absl::StrCat("jobs.", static_cast<int>(state));
  SPARROW_ASSIGN_OR_RETURN(int64_t after, DecodePageToken(listing, page_token));
  const bool filtered = state != v1::Job::STATE_UNSPECIFIED;
  std::lock_guard<std::mutex> lock(mu_);
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      connection_.Prepare(filtered
                              ? "SELECT seq, id, job FROM jobs "
                                "WHERE tenant = ?1 AND state = ?3 AND seq > ?2 "
                                "ORDER BY seq"
                              : "SELECT seq, id, job FROM jobs "
                                "WHERE tenant = ?1 AND seq > ?2 ORDER BY seq"));
  select.BindText(1, tenant);
  select.BindInt64(2, after);
  if (filtered) select.BindInt64(3, state);
  return ReadPage<v1::Job>(select, listing, page_size, "job");
}

absl::StatusOr<std::vector<JobRecord>> SqliteStore::JobsInStates(
    absl::Span<const v1::Job::State> states) {
  std::vector<JobRecord> records;
  if (states.empty()) return records;
  std::vector<std::string> placeholders(states.size(), "?");
  std::lock_guard<std::mutex> lock(mu_);
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      connection_.Prepare(
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

absl::StatusOr<std::pair<v1::Job, v1::ProgressEvent>>
SqliteStore::TransitionJob(const std::string& id,
                           const JobTransition& transition) {
  const v1::Job::State to = transition.to;
  if (to == v1::Job::STATE_UNSPECIFIED || !v1::Job::State_IsValid(to)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot move job ", id, " to state ", static_cast<int>(to)));
  }
  std::lock_guard<std::mutex> lock(mu_);
  Transaction txn(&connection_);
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
  SPARROW_ASSIGN_OR_RETURN(JobRecord record, LoadJob(id));
  v1::Job& job = record.job;
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
  const std::string reason = spec::ToValidUtf8(transition.reason);
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
  if (IsFinal(to)) *job.mutable_end_time() = now;
  if (transition.worker_crashed) {
    job.set_worker_crashes(job.worker_crashes() + 1);
  }
  if (!transition.summary.empty()) {
    job.set_summary(spec::ToValidUtf8(transition.summary));
  }
  job.set_last_seq(job.last_seq() + 1);

  v1::ProgressEvent event;
  event.set_job_id(id);
  event.set_seq(job.last_seq());
  event.set_kind(v1::ProgressEvent::STATE);
  *event.mutable_time() = now;
  event.set_state(to);
  event.set_reason(reason);

  SPARROW_RETURN_IF_ERROR(UpdateJob(job));
  SPARROW_ASSIGN_OR_RETURN(Statement insert, connection_.Prepare(kInsertEvent));
  SPARROW_RETURN_IF_ERROR(InsertEvent(insert, event));
  if (transition.model != nullptr) {
    SPARROW_ASSIGN_OR_RETURN(
        Statement put,
        connection_.Prepare("INSERT INTO models (job_id, model) "
                            "VALUES (?1, ?2) ON CONFLICT (job_id) "
                            "DO UPDATE SET model = excluded.model"));
    put.BindText(1, id);
    put.BindBlob(2, transition.model->SerializeAsString());
    SPARROW_RETURN_IF_ERROR(put.Run());
  }
  SPARROW_RETURN_IF_ERROR(txn.Commit());
  return std::make_pair(std::move(job), std::move(event));
}

// ---- progress
// -----------------------------------------------------------------

absl::StatusOr<std::vector<v1::ProgressEvent>> SqliteStore::AppendEvents(
    const std::string& job_id, std::vector<v1::ProgressEvent> events) {
  for (const v1::ProgressEvent& event : events) {
    if (event.kind() == v1::ProgressEvent::STATE) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job ", job_id,
          ": STATE events are appended by TransitionJob, not AppendEvents"));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  Transaction txn(&connection_);
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
  SPARROW_ASSIGN_OR_RETURN(JobRecord record, LoadJob(job_id));
  if (events.empty()) return events;
  v1::Job& job = record.job;
  const google::protobuf::Timestamp now = ToTimestamp(absl::Now());
  SPARROW_ASSIGN_OR_RETURN(Statement insert, connection_.Prepare(kInsertEvent));
  for (v1::ProgressEvent& event : events) {
    event.set_job_id(job_id);
    event.set_seq(job.last_seq() + 1);
    event.set_kind(v1::ProgressEvent::ITERATION);
    if (!event.has_time()) *event.mutable_time() = now;
    SPARROW_RETURN_IF_ERROR(InsertEvent(insert, event));
    job.set_last_seq(event.seq());
  }
  job.set_iterations(events.back().iteration());
  job.set_loss(events.back().loss());
  SPARROW_RETURN_IF_ERROR(UpdateJob(job));
  SPARROW_RETURN_IF_ERROR(txn.Commit());
  return events;
}

absl::StatusOr<std::vector<v1::ProgressEvent>> SqliteStore::ListEvents(
    const std::string& job_id, int64_t after_seq, int limit) {
  if (limit <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit must be positive, got ", limit));
  }
  std::lock_guard<std::mutex> lock(mu_);
  Transaction txn(&connection_);
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kRead));
  SPARROW_RETURN_IF_ERROR(LoadJob(job_id).status());
  SPARROW_ASSIGN_OR_RETURN(Statement select,
                           connection_.Prepare("SELECT seq, event FROM events "
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

// ---- checkpoints and models
// -----------------------------------------------------

absl::Status SqliteStore::PutCheckpoint(const std::string& job_id,
                                        absl::string_view bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction txn(&connection_);
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
  SPARROW_RETURN_IF_ERROR(LoadJob(job_id).status());
  SPARROW_ASSIGN_OR_RETURN(
      Statement put,
      connection_.Prepare(
          "INSERT INTO checkpoints (job_id, bytes, update_time) "
          "VALUES (?1, ?2, ?3) ON CONFLICT (job_id) DO UPDATE SET "
          "bytes = excluded.bytes, update_time = excluded.update_time"));
  put.BindText(1, job_id);
  put.BindBlob(2, bytes);
  put.BindInt64(3, absl::ToUnixNanos(absl::Now()));
  SPARROW_RETURN_IF_ERROR(put.Run());
  return txn.Commit();
}

absl::StatusOr<std::optional<std::string>> SqliteStore::JobBlob(
    const std::string& job_id, const char* select_sql) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction txn(&connection_);
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kRead));
  SPARROW_RETURN_IF_ERROR(LoadJob(job_id).status());
  SPARROW_ASSIGN_OR_RETURN(Statement select, connection_.Prepare(select_sql));
  select.BindText(1, job_id);
  SPARROW_ASSIGN_OR_RETURN(bool found, select.Step());
  if (!found) return std::optional<std::string>();
  return std::optional<std::string>(select.ColumnString(0));
}

absl::StatusOr<std::optional<std::string>> SqliteStore::GetCheckpoint(
    const std::string& job_id) {
  return JobBlob(job_id, "SELECT bytes FROM checkpoints WHERE job_id = ?1");
}

absl::StatusOr<v1::TrainedModel> SqliteStore::GetModel(
    const std::string& job_id) {
  SPARROW_ASSIGN_OR_RETURN(
      std::optional<std::string> blob,
      JobBlob(job_id, "SELECT model FROM models WHERE job_id = ?1"));
  if (!blob.has_value()) {
    return absl::NotFoundError(absl::StrCat("job ", job_id, " has no model"));
  }
  return Parse<v1::TrainedModel>(*blob,
                                 absl::StrCat("the model of job ", job_id));
}

// ---- opening ----

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

// Sets the connection up and creates (or checks) the schema.
absl::Status Configure(Connection& connection) {
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
  int64_t version = 0;
  {
    SPARROW_ASSIGN_OR_RETURN(Statement select,
                             connection.Prepare("PRAGMA user_version"));
    SPARROW_ASSIGN_OR_RETURN(bool row, select.Step());
    if (row) version = select.ColumnInt64(0);
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("store ", connection.path(), " has schema version ",
                     version, ", newer than this sparrowd's ", kSchemaVersion,
                     "; run a newer sparrowd"));
  }
  if (version < kSchemaVersion) {
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
  absl::Status s = Configure(connection);
  if (s.ok()) s = ProbeWrite(connection);
  if (absl::IsUnavailable(s) || absl::IsResourceExhausted(s)) {
    return Unwritable(path, s);
  }
  SPARROW_RETURN_IF_ERROR(s);
  return std::make_unique<SqliteStore>(std::move(connection));
}

}  // namespace sparrow::server
