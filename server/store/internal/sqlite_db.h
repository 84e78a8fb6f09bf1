// The SQLite driver under SqlStore (sql_store.h, through sql_db.h): RAII
// wrappers over the C API (a connection and its prepared statements) and the
// errors a failed call maps to. Internal to server/store/.
#ifndef SPARROW_SERVER_STORE_INTERNAL_SQLITE_DB_H_
#define SPARROW_SERVER_STORE_INTERNAL_SQLITE_DB_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/util/status_macros.h"
#include "server/store/store.h"

namespace sparrow::server::sqlite {

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
  // Rows changed by the statement (INSERT, UPDATE, DELETE).
  int64_t changes() const { return sqlite3_changes(sqlite3_db_handle(stmt_)); }
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

  // An error for result code rc of `what`, naming the store's path. Its
  // client message (server/internal_error.h) says what went wrong without
  // the path or the SQL.
  absl::Status Error(int rc, absl::string_view what) const;

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
  // A write transaction takes the write lock up front (BEGIN IMMEDIATE), so
  // that a read-then-write never fails half-way on a lock upgrade.
  absl::Status Begin(bool write) {
    return Exec(write ? "BEGIN IMMEDIATE" : "BEGIN");
  }

  int changes() const { return sqlite3_changes(db_.get()); }

 private:
  DbHandle db_;
  std::string path_;
};

}  // namespace sparrow::server::sqlite

#endif  // SPARROW_SERVER_STORE_INTERNAL_SQLITE_DB_H_
