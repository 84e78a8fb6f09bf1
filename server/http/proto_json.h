// Any protobuf message as nlohmann::json, with the proto field names, for the
// HTTP API. Unlike protobuf's own JSON printer it writes NaN and infinities
// as null (the stored metrics use NaN for "not measured"), 64-bit integers
// as numbers, enums by name, and google.protobuf.Timestamp as an RFC 3339
// string (null when unset).
#ifndef SPARROW_SERVER_HTTP_PROTO_JSON_H_
#define SPARROW_SERVER_HTTP_PROTO_JSON_H_

#include <string>

#include "google/protobuf/message.h"
#include "google/protobuf/timestamp.pb.h"
#include "nlohmann/json.hpp"

namespace sparrow::server::http {

nlohmann::json ProtoJson(const google::protobuf::Message& message);
nlohmann::json TimeJson(const google::protobuf::Timestamp& t);
// The name of the set field of the message's first oneof ("" when none).
std::string OneofName(const google::protobuf::Message& message);

}  // namespace sparrow::server::http

#endif  // SPARROW_SERVER_HTTP_PROTO_JSON_H_
