// The PostgreSQL driver under SqlStore (sql_store.h, through sql_db.h): RAII
// wrappers over libpq with the surface of sqlite_db.h (a connection,
// statements bound by number and stepped row by row), so that the store's SQL
// and logic are written once for both. Statements are written with SQLite's
// `?N` placeholders and sent with PostgreSQL's `$N`. Parameters go as text but
// blobs (binary); results come back binary. Internal to server/store/.
#ifndef SPARROW_SERVER_STORE_INTERNAL_PG_DB_H_
#define SPARROW_SERVER_STORE_INTERNAL_PG_DB_H_

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sparrow::server::pg {

struct ConnCloser {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
using ConnHandle = std::unique_ptr<PGconn, ConnCloser>;
struct ResultClearer {
  void operator()(PGresult* result) const { PQclear(result); }
};
using ResultHandle = std::unique_ptr<PGresult, ResultClearer>;

// `?1` -> `$1` outside of quoted text.
std::string ToPostgresPlaceholders(absl::string_view sql);

// The URI without its password, for messages and logs.
std::string RedactUri(absl::string_view uri);

class Connection;

// A statement: bound, then run on the first Step (or Run), its rows read one
// Step at a time. Reset makes it ready to be bound and run again.
class Statement {
 public:
  Statement(Connection* connection, std::string sql)
      : connection_(connection), sql_(std::move(sql)) {}

  // Parameters are numbered from 1. Values are copied.
  void BindInt64(int i, int64_t value);
  void BindText(int i, absl::string_view value);
  void BindTextOrNull(int i, absl::string_view value);
  void BindBlob(int i, absl::string_view value);

  // True when a row is available, false when the statement is done.
  absl::StatusOr<bool> Step();
  absl::Status Run();
  void Reset();

  // Rows changed by the statement (INSERT, UPDATE, DELETE).
  int64_t changes() const;

  int64_t ColumnInt64(int col) const;
  // Text and bytea columns alike; valid until the next Reset.
  absl::string_view ColumnBytes(int col) const;
  std::string ColumnString(int col) const {
    return std::string(ColumnBytes(col));
  }

 private:
  struct Param {
    std::optional<std::string> value;  // nullopt = NULL
    bool binary = false;
  };
  Param& At(int i);
  absl::Status Execute();

  Connection* connection_;
  std::string sql_;
  std::vector<Param> params_;
  ResultHandle result_;
  int row_ = -1;
};

class Connection {
 public:
  // Connects to a libpq URI (postgresql://...); UNAVAILABLE names the
  // redacted URI and libpq's reason.
  static absl::StatusOr<Connection> Open(const std::string& uri);

  const std::string& name() const { return name_; }
  PGconn* get() const { return conn_.get(); }

  // An error for a failed result (or a failed connection when result is
  // null), naming the server and `what`; its client message says what went
  // wrong without either.
  absl::Status Error(const PGresult* result, absl::string_view what) const;

  absl::StatusOr<Statement> Prepare(absl::string_view sql) {
    return Statement(this, ToPostgresPlaceholders(sql));
  }
  // Runs one or more statements that return nothing of interest.
  absl::Status Exec(const char* sql);
  // The boolean a one-row, one-column query returns.
  absl::StatusOr<bool> QueryBool(const char* sql);
  // Reconnects a broken connection outside of a transaction (and sets the
  // new session up); an error when the connection is unusable.
  absl::Status ResetIfBroken();
  // What every session of ours runs first.
  absl::Status SetUpSession();
  // In a transaction (a broken connection is in none: its server ended
  // whatever was open).
  bool InTransaction() const {
    const PGTransactionStatusType status = PQtransactionStatus(conn_.get());
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR ||
           status == PQTRANS_ACTIVE;
  }
  // READ COMMITTED, both: a write transaction locks the rows it reads to
  // change (the job's, SELECT ... FOR UPDATE), which serializes the writes
  // of one job without failing those of different jobs that share index
  // pages, as SERIALIZABLE's predicate locks would.
  absl::Status Begin(bool write) {
    (void)write;
    return Exec("BEGIN");
  }

 private:
  Connection(ConnHandle conn, std::string name)
      : conn_(std::move(conn)), name_(std::move(name)) {}

  ConnHandle conn_;
  std::string name_;
};

}  // namespace sparrow::server::pg

#endif  // SPARROW_SERVER_STORE_INTERNAL_PG_DB_H_
