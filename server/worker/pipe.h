// Framing of protobuf messages on a pipe between sparrowd and a worker
// process: an 8-byte little-endian length, then the serialized message.
// Blocking I/O; EINTR is retried. Not thread-safe per fd: callers serialize
// writers.
#ifndef SPARROW_SERVER_WORKER_PIPE_H_
#define SPARROW_SERVER_WORKER_PIPE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "google/protobuf/message_lite.h"

namespace sparrow::server {

// UNAVAILABLE when the other end has closed the pipe.
absl::Status WriteMessage(int fd, const google::protobuf::MessageLite& message);

// Reads one message into *message. OUT_OF_RANGE at a clean end of stream
// (the other end closed the pipe between messages), DATA_LOSS for a frame
// that is cut short, longer than max_bytes or does not parse.
absl::Status ReadMessage(int fd, int64_t max_bytes,
                         google::protobuf::MessageLite* message);

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_WORKER_PIPE_H_
