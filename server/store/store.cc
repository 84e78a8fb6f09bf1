// The Store's defaults for what only a shared store does, and the lost-lease
// error shared by every store.
#include "server/store/store.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace sparrow::server {
namespace {

constexpr char kLostLeaseUrl[] = "type.googleapis.com/sparrow.server.LostLease";

absl::Status NotShared(const char* what) {
  return absl::UnimplementedError(
      absl::StrCat(what,
                   " needs a store that replicas share (sparrowd "
                   "--store postgresql://...)"));
}

}  // namespace

absl::Status MarkLostLease(absl::Status status) {
  status.SetPayload(kLostLeaseUrl, absl::Cord("1"));
  return status;
}

bool IsLostLease(const absl::Status& status) {
  return status.GetPayload(kLostLeaseUrl).has_value();
}

absl::StatusOr<std::optional<ClaimedJob>> Store::ClaimJob(const std::string&,
                                                          absl::Duration,
                                                          int64_t) {
  return NotShared("claiming a job");
}

absl::StatusOr<v1::Job> Store::RenewLease(const std::string&, int32_t,
                                          absl::Duration) {
  return NotShared("renewing a lease");
}

absl::StatusOr<int64_t> Store::ReleaseLeases(const std::string&) {
  return NotShared("releasing leases");
}

absl::StatusOr<QueueCounts> Store::CountQueued(const std::string&) {
  return NotShared("counting queued jobs");
}

absl::Status Store::Listen(
    const std::function<void(const std::string&, int64_t)>&,
    const std::atomic<bool>&) {
  return NotShared("listening to other replicas");
}

}  // namespace sparrow::server
