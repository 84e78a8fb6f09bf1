#include "server/store/internal/sql_common.h"

#include <algorithm>
#include <random>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/time_util.h"
#include "server/store/internal/sql_store.h"
#include "translate/text.h"

namespace sparrow::server::sql {
namespace {

constexpr char kBadPageToken[] = "page_token is not a token this server issued";

}  // namespace

google::protobuf::Timestamp ToTimestamp(absl::Time t) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
      absl::ToUnixNanos(t));
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

absl::Status DatasetNotFound(const std::string& id) {
  return absl::NotFoundError(
      absl::StrCat("dataset ", translate::ForMessage(id), " not found"));
}

absl::Status JobNotFound(const std::string& id) {
  return absl::NotFoundError(
      absl::StrCat("job ", translate::ForMessage(id), " not found"));
}

absl::Status LostLease(const std::string& id, int32_t fence,
                       const v1::Job& job) {
  return MarkLostLease(absl::AbortedError(absl::StrCat(
      "job ", id, ": attempt ", fence,
      " lost its lease; the job is now attempt ", job.attempts(),
      job.replica().empty() ? "" : absl::StrCat(" on replica ", job.replica()),
      " (", v1::Job::State_Name(job.state()),
      "), so this replica's write was refused")));
}

ConnectionPool::ConnectionPool(std::vector<Connection> connections)
    : all_(std::move(connections)) {
  for (Connection& c : all_) free_.push_back(&c);
}

Connection* ConnectionPool::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  freed_.wait(lock, [this] { return !free_.empty(); });
  Connection* connection = free_.back();
  free_.pop_back();
  return connection;
}

void ConnectionPool::Release(Connection* connection) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(connection);
  }
  freed_.notify_one();
}

thread_local Connection* Session::current_ = nullptr;

bool IsRetryable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kAborted && !IsLostLease(status);
}

void RetryPause(int tries) {
  static thread_local std::mt19937 random(std::random_device{}());
  const int max_ms = std::min(200, 2 << tries);
  std::uniform_int_distribution<int> ms(1, max_ms);
  absl::SleepFor(absl::Milliseconds(ms(random)));
}

}  // namespace sparrow::server::sql
