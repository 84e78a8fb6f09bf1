// The one mapping from absl::Status (what core, the store and the services
// return) to grpc::Status (what clients see), per DESIGN.md "Errors". The
// message passes through unchanged (it already says what is wrong and how to
// fix it), except for internal failures: INTERNAL, UNKNOWN and DATA_LOSS, and
// any error made by WithClientMessage (server/internal_error.h), e.g. the
// store's. Their full message goes to the log under a new correlation id
// ("E-3f9a0c21b7d4"), and the client gets the client message (or a generic
// one) ending in "(error id E-...; the server's log has the details)".
#ifndef SPARROW_SERVER_STATUS_H_
#define SPARROW_SERVER_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace sparrow::server {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_STATUS_H_
