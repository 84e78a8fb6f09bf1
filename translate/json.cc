#include "translate/json.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/util/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/unknown_field_set.h"
#include "google/protobuf/util/json_util.h"
#include "translate/json_shape.h"

namespace sparrow::translate {

absl::StatusOr<v1::JobSpec> ParseJobSpecJson(absl::string_view json) {
  // Editors on Windows write a byte-order mark; RFC 8259 lets a parser skip
  // it, and CSV files are read past one too.
  absl::ConsumePrefix(&json, "\xEF\xBB\xBF");
  SPARROW_RETURN_IF_ERROR(
      CheckJsonShape(json, *v1::JobSpec::descriptor(), "the job spec"));
  v1::JobSpec spec;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &spec, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the job spec is not valid: ",
        std::string(status.message().data(), status.message().size()),
        " (field names are those of sparrow.v1.JobSpec in "
        "proto/sparrow/v1/spec.proto)"));
  }
  return spec;
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

absl::Status RejectUnknownFields(const google::protobuf::Message& message,
                                 const std::string& path) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  const google::protobuf::UnknownFieldSet& unknown =
      reflection->GetUnknownFields(message);
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path.empty() ? std::string("the request") : path,
        " has a field number ", unknown.field(0).number(),
        " that this server does not know (a client built from a newer "
        "sparrow/v1 API?); remove it, or upgrade sparrowd"));
  }
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const google::protobuf::FieldDescriptor* field : fields) {
    if (field->cpp_type() !=
        google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      continue;
    }
    const std::string name =
        path.empty() ? field->name() : absl::StrCat(path, ".", field->name());
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        SPARROW_RETURN_IF_ERROR(RejectUnknownFields(
            reflection->GetRepeatedMessage(message, field, i),
            absl::StrCat(name, "[", i, "]")));
      }
    } else {
      SPARROW_RETURN_IF_ERROR(
          RejectUnknownFields(reflection->GetMessage(message, field), name));
    }
  }
  return absl::OkStatus();
}

bool HasJsonSuffix(absl::string_view path) {
  return path.size() > 5 && absl::EndsWith(path, ".json");
}

}  // namespace sparrow::translate
