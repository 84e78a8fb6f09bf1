// The database handles SqlStore (sql_store.h) is written against: a
// connection, its statements and transactions, over either driver (SQLite,
// sqlite_db.h; PostgreSQL, pg_db.h). Both drivers have the same surface; the
// handles forward to one through a virtual interface (a virtual call costs
// nothing next to a statement). Internal to server/store/.
#ifndef SPARROW_SERVER_STORE_INTERNAL_SQL_DB_H_
#define SPARROW_SERVER_STORE_INTERNAL_SQL_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/util/status_macros.h"

namespace sparrow::server::sql {

class Statement {
 public:
  class Impl {
   public:
    virtual ~Impl() = default;
    virtual void BindInt64(int i, int64_t value) = 0;
    virtual void BindText(int i, absl::string_view value) = 0;
    virtual void BindTextOrNull(int i, absl::string_view value) = 0;
    virtual void BindBlob(int i, absl::string_view value) = 0;
    virtual absl::StatusOr<bool> Step() = 0;
    virtual void Reset() = 0;
    virtual int64_t changes() const = 0;
    virtual int64_t ColumnInt64(int col) = 0;
    virtual absl::string_view ColumnBytes(int col) = 0;
  };

  explicit Statement(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

  // Parameters are numbered from 1 (`?1` in the SQL). Values are copied.
  void BindInt64(int i, int64_t value) { impl_->BindInt64(i, value); }
  void BindText(int i, absl::string_view value) { impl_->BindText(i, value); }
  // Binds NULL for an empty value.
  void BindTextOrNull(int i, absl::string_view value) {
    impl_->BindTextOrNull(i, value);
  }
  void BindBlob(int i, absl::string_view value) { impl_->BindBlob(i, value); }
  // True when a row is available, false when the statement is done.
  absl::StatusOr<bool> Step() { return impl_->Step(); }
  // Steps a statement that returns no rows.
  absl::Status Run() {
    SPARROW_ASSIGN_OR_RETURN(bool row, Step());
    if (row) return absl::InternalError("statement unexpectedly returned rows");
    return absl::OkStatus();
  }
  // Makes the statement ready to be bound and stepped again.
  void Reset() { impl_->Reset(); }
  // Rows changed by the statement (INSERT, UPDATE, DELETE).
  int64_t changes() const { return impl_->changes(); }
  int64_t ColumnInt64(int col) { return impl_->ColumnInt64(col); }
  // Text and blob columns alike; valid until the next Step or Reset.
  absl::string_view ColumnBytes(int col) { return impl_->ColumnBytes(col); }
  std::string ColumnString(int col) { return std::string(ColumnBytes(col)); }

 private:
  std::unique_ptr<Impl> impl_;
};

class Connection {
 public:
  class Impl {
   public:
    virtual ~Impl() = default;
    virtual absl::StatusOr<Statement> Prepare(absl::string_view sql) = 0;
    virtual absl::Status Exec(const char* sql) = 0;
    virtual bool InTransaction() const = 0;
    virtual absl::Status Begin(bool write) = 0;
  };

  explicit Connection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

  absl::StatusOr<Statement> Prepare(absl::string_view sql) {
    return impl_->Prepare(sql);
  }
  // Runs one or more statements that return nothing of interest.
  absl::Status Exec(const char* sql) { return impl_->Exec(sql); }
  bool InTransaction() const { return impl_->InTransaction(); }
  // BEGIN a transaction; what a write transaction is is the driver's
  // (SQLite: BEGIN IMMEDIATE, one writer at a time; PostgreSQL: READ
  // COMMITTED, with the rows to change locked by the store's SELECT ... FOR
  // UPDATE).
  absl::Status Begin(bool write) { return impl_->Begin(write); }

 private:
  std::unique_ptr<Impl> impl_;
};

// A transaction that rolls back unless committed, on a Connection or on a
// driver's connection (for opening a store).
template <typename C>
class BasicTransaction {
 public:
  enum Mode { kRead, kWrite };

  explicit BasicTransaction(C* connection) : connection_(connection) {}
  BasicTransaction(const BasicTransaction&) = delete;
  BasicTransaction& operator=(const BasicTransaction&) = delete;
  ~BasicTransaction() {
    // A database may roll back by itself after some errors.
    if (begun_ && connection_->InTransaction()) {
      connection_->Exec("ROLLBACK").IgnoreError();
    }
  }
  absl::Status Begin(Mode mode) {
    SPARROW_RETURN_IF_ERROR(connection_->Begin(mode == kWrite));
    begun_ = true;
    return absl::OkStatus();
  }
  absl::Status Commit() {
    SPARROW_RETURN_IF_ERROR(connection_->Exec("COMMIT"));
    begun_ = false;
    return absl::OkStatus();
  }

 private:
  C* connection_;
  bool begun_ = false;
};
using Transaction = BasicTransaction<Connection>;

// A Connection over a driver's connection (sqlite::Connection,
// pg::Connection), moved in.
template <typename DriverConnection>
Connection Adapt(DriverConnection connection) {
  using DriverStatement = std::decay_t<decltype(*connection.Prepare(""))>;
  struct StatementImpl final : Statement::Impl {
    explicit StatementImpl(DriverStatement st) : s(std::move(st)) {}
    void BindInt64(int i, int64_t v) override { s.BindInt64(i, v); }
    void BindText(int i, absl::string_view v) override { s.BindText(i, v); }
    void BindTextOrNull(int i, absl::string_view v) override {
      s.BindTextOrNull(i, v);
    }
    void BindBlob(int i, absl::string_view v) override { s.BindBlob(i, v); }
    absl::StatusOr<bool> Step() override { return s.Step(); }
    void Reset() override { s.Reset(); }
    int64_t changes() const override { return s.changes(); }
    int64_t ColumnInt64(int col) override { return s.ColumnInt64(col); }
    absl::string_view ColumnBytes(int col) override {
      return s.ColumnBytes(col);
    }
    DriverStatement s;
  };
  struct ConnectionImpl final : Connection::Impl {
    explicit ConnectionImpl(DriverConnection dc) : c(std::move(dc)) {}
    absl::StatusOr<Statement> Prepare(absl::string_view sql) override {
      SPARROW_ASSIGN_OR_RETURN(auto s, c.Prepare(sql));
      return Statement(std::make_unique<StatementImpl>(std::move(s)));
    }
    absl::Status Exec(const char* sql) override { return c.Exec(sql); }
    bool InTransaction() const override { return c.InTransaction(); }
    absl::Status Begin(bool write) override { return c.Begin(write); }
    DriverConnection c;
  };
  return Connection(std::make_unique<ConnectionImpl>(std::move(connection)));
}

}  // namespace sparrow::server::sql

#endif  // SPARROW_SERVER_STORE_INTERNAL_SQL_DB_H_
