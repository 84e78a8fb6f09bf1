#include "server/store/internal/pg_db.h"

#include <cstring>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "server/internal_error.h"

namespace sparrow::server::pg {
namespace {

// What a client is told when the store fails (server/internal_error.h).
constexpr char kStoreBusy[] =
    "the server's store was busy with a conflicting change; nothing was "
    "changed; retry";
constexpr char kStoreUnavailable[] =
    "the server cannot reach its database; nothing was changed; retry later, "
    "and if it persists ask the server's operator to check the database";
constexpr char kStoreFull[] =
    "the server's database is out of disk space; nothing was changed; retry "
    "after its operator has freed space";
constexpr char kStoreTooBig[] =
    "the item is too large for the server's store; nothing was changed";
constexpr char kNotUtf8[] = "a text value is not valid UTF-8";
constexpr char kStoreDamaged[] =
    "the server's store is damaged; nothing was changed; report this to the "
    "server's operator";
constexpr char kStoreFailed[] =
    "the server's store failed; nothing was changed; retry, and report it to "
    "the server's operator if it persists";

constexpr Oid kBoolOid = 16, kByteaOid = 17, kInt8Oid = 20, kInt2Oid = 21,
              kInt4Oid = 23;

int64_t BigEndian(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  // Sign-extend the narrower integers.
  const int shift = 64 - 8 * bytes;
  return shift == 0 ? static_cast<int64_t>(v)
                    : static_cast<int64_t>(v << shift) >> shift;
}

absl::Status ForSqlState(absl::string_view state, std::string message) {
  // 23505: a unique key another transaction inserted meanwhile (the same
  // request_id, the same upload); the retry finds that row.
  if (state == "40001" || state == "40P01" || state == "55P03" ||
      state == "23505") {
    return WithClientMessage(absl::AbortedError(message), kStoreBusy);
  }
  if (absl::StartsWith(state, "08") || state == "57P01" || state == "57P02" ||
      state == "57P03" || state == "53300" || state.empty()) {
    return WithClientMessage(absl::UnavailableError(message),
                             kStoreUnavailable);
  }
  if (state == "53100") {
    return WithClientMessage(absl::ResourceExhaustedError(message), kStoreFull);
  }
  if (state == "54000" || state == "53200") {
    return WithClientMessage(absl::ResourceExhaustedError(message),
                             kStoreTooBig);
  }
  if (state == "22021") {
    return WithClientMessage(absl::InvalidArgumentError(message), kNotUtf8);
  }
  if (state == "XX001" || state == "XX002") {
    return WithClientMessage(absl::DataLossError(message), kStoreDamaged);
  }
  return WithClientMessage(absl::InternalError(message), kStoreFailed);
}

}  // namespace

std::string ToPostgresPlaceholders(absl::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  char quote = 0;
  for (char c : sql) {
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '?') {
      c = '$';
    }
    out.push_back(c);
  }
  return out;
}

std::string RedactUri(absl::string_view uri) {
  // postgresql://user:password@host/...: drop ":password".
  const size_t scheme = uri.find("://");
  const size_t at = uri.find('@');
  if (scheme == absl::string_view::npos || at == absl::string_view::npos) {
    return std::string(uri);
  }
  const size_t colon = uri.find(':', scheme + 3);
  if (colon == absl::string_view::npos || colon > at) return std::string(uri);
  return absl::StrCat(uri.substr(0, colon), uri.substr(at));
}

// ---- Statement ----

Statement::Param& Statement::At(int i) {
  if (static_cast<int>(params_.size()) < i) params_.resize(i);
  return params_[i - 1];
}

void Statement::BindInt64(int i, int64_t value) {
  At(i) = {absl::StrCat(value), false};
}
void Statement::BindText(int i, absl::string_view value) {
  At(i) = {std::string(value), false};
}
void Statement::BindTextOrNull(int i, absl::string_view value) {
  if (value.empty()) {
    At(i) = {std::nullopt, false};
  } else {
    BindText(i, value);
  }
}
void Statement::BindBlob(int i, absl::string_view value) {
  At(i) = {std::string(value), true};
}

absl::Status Statement::Execute() {
  SPARROW_RETURN_IF_ERROR(connection_->ResetIfBroken());
  const int n = static_cast<int>(params_.size());
  std::vector<const char*> values(n);
  std::vector<int> lengths(n), formats(n);
  std::vector<Oid> types(n);
  for (int i = 0; i < n; ++i) {
    const Param& p = params_[i];
    values[i] = p.value.has_value() ? p.value->data() : nullptr;
    lengths[i] = p.value.has_value() ? static_cast<int>(p.value->size()) : 0;
    formats[i] = p.binary ? 1 : 0;
    types[i] = p.binary ? kByteaOid : 0;
  }
  result_.reset(PQexecParams(connection_->get(), sql_.c_str(), n, types.data(),
                             values.data(), lengths.data(), formats.data(),
                             /*resultFormat=*/1));
  const ExecStatusType status = PQresultStatus(result_.get());
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    absl::Status error = connection_->Error(result_.get(), sql_);
    result_.reset();
    return error;
  }
  row_ = -1;
  return absl::OkStatus();
}

absl::StatusOr<bool> Statement::Step() {
  if (result_ == nullptr) SPARROW_RETURN_IF_ERROR(Execute());
  ++row_;
  return row_ < PQntuples(result_.get());
}

absl::Status Statement::Run() {
  SPARROW_ASSIGN_OR_RETURN(bool row, Step());
  if (row) return absl::InternalError("statement unexpectedly returned rows");
  return absl::OkStatus();
}

void Statement::Reset() {
  result_.reset();
  params_.clear();
  row_ = -1;
}

int64_t Statement::changes() const {
  int64_t n = 0;
  if (result_ != nullptr) {
    (void)absl::SimpleAtoi(PQcmdTuples(result_.get()), &n);
  }
  return n;
}

int64_t Statement::ColumnInt64(int col) const {
  if (PQgetisnull(result_.get(), row_, col)) return 0;
  const char* p = PQgetvalue(result_.get(), row_, col);
  switch (PQftype(result_.get(), col)) {
    case kInt8Oid:
      return BigEndian(p, 8);
    case kInt4Oid:
      return BigEndian(p, 4);
    case kInt2Oid:
      return BigEndian(p, 2);
    case kBoolOid:
      return p[0] != 0;
    default:
      return 0;
  }
}

absl::string_view Statement::ColumnBytes(int col) const {
  if (PQgetisnull(result_.get(), row_, col)) return absl::string_view();
  return absl::string_view(PQgetvalue(result_.get(), row_, col),
                           PQgetlength(result_.get(), row_, col));
}

// ---- Connection ----

absl::StatusOr<Connection> Connection::Open(const std::string& uri) {
  ConnHandle conn(PQconnectdb(uri.c_str()));
  const std::string name = RedactUri(uri);
  if (conn == nullptr || PQstatus(conn.get()) != CONNECTION_OK) {
    std::string reason = conn != nullptr ? PQerrorMessage(conn.get())
                                         : std::string("out of memory");
    absl::StripTrailingAsciiWhitespace(&reason);
    return absl::UnavailableError(
        absl::StrCat("cannot connect to the database ", name, ": ", reason));
  }
  // The server's NOTICEs ("relation ... already exists, skipping") would go
  // to stderr; they are routine.
  PQsetNoticeProcessor(
      conn.get(), [](void*, const char*) {}, nullptr);
  Connection connection(std::move(conn), name);
  SPARROW_RETURN_IF_ERROR(connection.SetUpSession());
  return connection;
}

absl::Status Connection::SetUpSession() {
  // A replica stopped in the middle of a transaction (SIGSTOP, a partition
  // that keeps the socket open) would hold its row locks, and with them the
  // jobs it holds, for as long as it stays stopped; its transactions take
  // milliseconds, so one idle this long is ended by the server.
  return Exec("SET idle_in_transaction_session_timeout = '5s'");
}

absl::Status Connection::Error(const PGresult* result,
                               absl::string_view what) const {
  const char* state = result != nullptr
                          ? PQresultErrorField(result, PG_DIAG_SQLSTATE)
                          : nullptr;
  std::string detail = result != nullptr ? PQresultErrorMessage(result)
                                         : PQerrorMessage(conn_.get());
  absl::StripTrailingAsciiWhitespace(&detail);
  return ForSqlState(state != nullptr ? state : "",
                     absl::StrCat("store ", name_, ": ", what, ": ", detail));
}

absl::Status Connection::ResetIfBroken() {
  // A restarted server or a dropped connection: reconnect. Inside a
  // transaction the failure is the caller's (its transaction is lost).
  if (PQstatus(conn_.get()) == CONNECTION_BAD && !InTransaction()) {
    PQreset(conn_.get());
    if (PQstatus(conn_.get()) == CONNECTION_OK) return SetUpSession();
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Connection::QueryBool(const char* sql) {
  ResultHandle result(PQexec(conn_.get(), sql));
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK) {
    return Error(result.get(), sql);
  }
  if (PQntuples(result.get()) != 1 || PQnfields(result.get()) != 1) {
    return absl::InternalError(
        absl::StrCat("store ", name_, ": ", sql, " returned no single value"));
  }
  return std::string_view(PQgetvalue(result.get(), 0, 0)) == "t";
}

absl::Status Connection::Exec(const char* sql) {
  SPARROW_RETURN_IF_ERROR(ResetIfBroken());
  ResultHandle result(PQexec(conn_.get(), sql));
  const ExecStatusType status = PQresultStatus(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return Error(result.get(), sql);
  }
  return absl::OkStatus();
}

}  // namespace sparrow::server::pg
