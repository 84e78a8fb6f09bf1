#include "server/worker/pipe.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace sparrow::server {
namespace {

absl::Status WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::UnavailableError(
          absl::StrCat("the pipe is closed: ", std::strerror(errno)));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// Bytes read before the end of stream (fewer than size only at its end).
absl::StatusOr<size_t> ReadAll(int fd, char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::DataLossError(
          absl::StrCat("reading the pipe failed: ", std::strerror(errno)));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace

absl::Status WriteMessage(int fd,
                          const google::protobuf::MessageLite& message) {
  std::string frame(8, '\0');
  const uint64_t size = message.ByteSizeLong();
  for (int i = 0; i < 8; ++i) frame[i] = static_cast<char>(size >> (8 * i));
  if (!message.AppendToString(&frame)) {
    return absl::InternalError("a worker message could not be serialized");
  }
  return WriteAll(fd, frame.data(), frame.size());
}

absl::Status ReadMessage(int fd, int64_t max_bytes,
                         google::protobuf::MessageLite* message) {
  unsigned char header[8];
  auto got = ReadAll(fd, reinterpret_cast<char*>(header), sizeof(header));
  if (!got.ok()) return got.status();
  if (*got == 0) return absl::OutOfRangeError("end of stream");
  if (*got < sizeof(header)) {
    return absl::DataLossError("the pipe closed inside a frame header");
  }
  uint64_t size = 0;
  for (int i = 0; i < 8; ++i) size |= uint64_t{header[i]} << (8 * i);
  if (size > static_cast<uint64_t>(max_bytes)) {
    return absl::DataLossError(absl::StrCat(
        "a frame of ", size, " bytes is over the limit of ", max_bytes));
  }
  std::string body(size, '\0');
  got = ReadAll(fd, body.data(), body.size());
  if (!got.ok()) return got.status();
  if (*got < size) {
    return absl::DataLossError("the pipe closed inside a frame");
  }
  if (!message->ParseFromString(body)) {
    return absl::DataLossError("a frame does not parse");
  }
  return absl::OkStatus();
}

}  // namespace sparrow::server
