// Text that crosses the API: protobuf `string` fields must hold valid UTF-8
// (a peer cannot parse a message that does not), and error messages must stay
// readable whatever a client sent. Used by the server (upload validation,
// messages that echo ids) and by the client (names taken from file names).
#ifndef SPARROW_TRANSLATE_TEXT_H_
#define SPARROW_TRANSLATE_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace sparrow::translate {

// True when `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF). Abseil 20220623 has no such check and
// protobuf's is internal, hence this one.
bool IsValidUtf8(absl::string_view text);

// INVALID_ARGUMENT "<what> is not valid UTF-8 (<escaped text>); ..." unless
// `text` is valid UTF-8.
absl::Status CheckUtf8(absl::string_view text, absl::string_view what);

// The first string field (also in repeated and nested messages) of `message`
// that is not valid UTF-8, as INVALID_ARGUMENT naming its path
// ("spec.data.inputs[1]"); OK when there is none. `prefix` starts the path.
absl::Status CheckUtf8Fields(const google::protobuf::Message& message,
                             absl::string_view prefix = "");

// `text` with every byte that is not part of a valid UTF-8 sequence replaced
// by U+FFFD (for display names made from file names, which are bytes).
std::string ToValidUtf8(absl::string_view text);

// An id (or any client-provided string) for an error message: at most
// `max_chars` code points, then "…" and how many bytes were left out, so that
// an 8 KB id cannot bury the message. Invalid UTF-8 is replaced as by
// ToValidUtf8.
std::string ForMessage(absl::string_view text, size_t max_chars = 64);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_TEXT_H_
