// JSON and protobuf messages: parsing a JobSpec from JSON (protobuf JSON
// mapping, unknown fields refused), printing any message as JSON, refusing
// unknown fields of binary messages, and telling a JSON file by its name.
#ifndef SPARROW_TRANSLATE_JSON_H_
#define SPARROW_TRANSLATE_JSON_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::translate {

// Parses a JobSpec from JSON (protobuf JSON mapping). Unknown fields are
// errors.
absl::StatusOr<v1::JobSpec> ParseJobSpecJson(absl::string_view json);

// `message` as indented JSON with the proto field names.
std::string ToJson(const google::protobuf::Message& message);

// Refuses fields of `message` (and of the messages in it) that this build
// does not know: protobuf keeps them and otherwise ignores them, so a spec
// with an option from a newer client would silently train something else.
// INVALID_ARGUMENT names the field's path under `path` and its number.
absl::Status RejectUnknownFields(const google::protobuf::Message& message,
                                 const std::string& path);

// True when `path` names a JSON file (ends in ".json" after at least one
// character); model files are JSON by that name and binary protobuf
// otherwise.
bool HasJsonSuffix(absl::string_view path);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_JSON_H_
