// The one mapping from absl::Status (what core, the store and the services
// return) to grpc::Status (what clients see), per DESIGN.md "Errors". The
// message passes through unchanged: it already says what is wrong and how to
// fix it.
#ifndef SPARROW_SERVER_STATUS_H_
#define SPARROW_SERVER_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace sparrow::server {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_STATUS_H_
