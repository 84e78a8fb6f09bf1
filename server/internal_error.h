// Errors whose message is for the operator, not the client: store failures
// name files and SQL, which a client must not see and cannot act on. Such an
// error carries, as a payload, the message a client gets instead ("what
// happened and what to do"); server::ToGrpcStatus logs the full message under
// a correlation id and sends the client message with that id.
#ifndef SPARROW_SERVER_INTERNAL_ERROR_H_
#define SPARROW_SERVER_INTERNAL_ERROR_H_

#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"

namespace sparrow::server {

inline constexpr char kClientMessageUrl[] =
    "type.googleapis.com/sparrow.server.ClientMessage";

// `detail` (for the log) with the message a client sees instead.
inline absl::Status WithClientMessage(absl::Status detail,
                                      absl::string_view client_message) {
  detail.SetPayload(kClientMessageUrl, absl::Cord(client_message));
  return detail;
}

// The client message of an error made by WithClientMessage.
inline std::optional<std::string> ClientMessage(const absl::Status& status) {
  const auto payload = status.GetPayload(kClientMessageUrl);
  if (!payload.has_value()) return std::nullopt;
  return std::string(*payload);
}

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_INTERNAL_ERROR_H_
