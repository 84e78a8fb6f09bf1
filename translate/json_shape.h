// Checks a JSON text against a protobuf message type before protobuf's JSON
// parser reads it. That parser is lenient where a spec should not be (it takes
// trailing commas, and "u" where a list ["u"] is meant) and terse where a user
// needs help (`stoping: Cannot find field.`). This check refuses what the
// spec reference does not allow and says what to write instead:
//   - syntax errors (strict JSON, RFC 8259), with line and column;
//   - unknown field names, with the closest known one ("did you mean
//     'stopping'?") or the list of fields there;
//   - two alternatives of a oneof set together ("optimizer sets both 'adam'
//     and 'nailm'");
//   - a value of the wrong JSON type for its field (a list, an object, a
//     string, a number or true/false), named by its path;
//   - enum names that do not exist, with the valid ones ("tanh": use
//     "ACTIVATION_TANH").
// 64-bit integers may be strings, enums numbers and floating-point values
// "NaN", "Infinity" or "-Infinity", as the protobuf JSON mapping prints them;
// null means "not set".
#ifndef SPARROW_TRANSLATE_JSON_SHAPE_H_
#define SPARROW_TRANSLATE_JSON_SHAPE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace sparrow::translate {

// OK, or INVALID_ARGUMENT "<what>: <path>: <what is wrong; what to write>".
absl::Status CheckJsonShape(absl::string_view json,
                            const google::protobuf::Descriptor& type,
                            absl::string_view what);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_JSON_SHAPE_H_
