// What the SQL stores share whatever the database (SqlStore, sql_store.h):
// reading stored protos, page tokens, pages of listings and the not-found
// errors. Internal to server/store/.
#ifndef SPARROW_SERVER_STORE_INTERNAL_SQL_COMMON_H_
#define SPARROW_SERVER_STORE_INTERNAL_SQL_COMMON_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/util/status_macros.h"
#include "google/protobuf/timestamp.pb.h"
#include "server/store/store.h"
#include "spdlog/spdlog.h"

namespace sparrow::server::sql {

google::protobuf::Timestamp ToTimestamp(absl::Time t);

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
std::string EncodePageToken(absl::string_view listing, int64_t last_seq);

// The seq after which the page starts: 0 for an empty token.
absl::StatusOr<int64_t> DecodePageToken(absl::string_view listing,
                                        const std::string& token);

// INVALID_ARGUMENT unless page_size > 0.
absl::Status CheckPageSize(int page_size);

absl::Status DatasetNotFound(const std::string& id);
absl::Status JobNotFound(const std::string& id);
// A write of attempt `fence` refused because `job` has moved on to a later
// attempt (IsLostLease).
absl::Status LostLease(const std::string& id, int32_t fence,
                       const v1::Job& job);

// One page of a listing from `select`, whose rows are (seq, id, serialized
// Message) in seq order after the token's seq. A record that cannot be parsed
// (e.g. a name that is not UTF-8, stored by an older sparrowd) is logged and
// left out: one bad row must not hide the rest of the list.
template <typename Message, typename Statement>
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

}  // namespace sparrow::server::sql

#endif  // SPARROW_SERVER_STORE_INTERNAL_SQL_COMMON_H_
