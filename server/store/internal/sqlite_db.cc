#include "server/store/internal/sqlite_db.h"

#include "server/internal_error.h"

namespace sparrow::server::sqlite {
namespace {

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

}  // namespace

absl::Status Connection::Error(int rc, absl::string_view what) const {
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

}  // namespace sparrow::server::sqlite
