// The one place where protobuf meets core: JobSpec JSON parsing and validation,
// JobSpec -> core::TrainConfig, CSV bytes + JobSpec -> core::TrainData, and
// core results -> sparrow.v1.TrainedModel (and back, to run a stored model).
#ifndef SPARROW_SERVER_SPEC_CONVERT_H_
#define SPARROW_SERVER_SPEC_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/train/trainer.h"
#include "sparrow/v1/model.pb.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::spec {

// Parses a JobSpec from JSON (protobuf JSON mapping). Unknown fields are
// errors.
absl::StatusOr<v1::JobSpec> ParseJobSpecJson(absl::string_view json);
std::string ToJson(const google::protobuf::Message& message);

// Translates and validates the model / loss / optimizer / stopping parts.
// Errors name the field (e.g. "model.state_space_rnn.fx_hidden[0] is -4; layer
// sizes must be positive").
absl::StatusOr<core::TrainConfig> ToTrainConfig(const v1::JobSpec& spec);

// Parses the CSV bytes of the spec's data source and cuts the splits.
absl::StatusOr<core::TrainData> LoadTrainData(const v1::JobSpec& spec,
                                              const core::TrainConfig& config,
                                              absl::string_view csv);

v1::TrainedModel ToProto(const v1::JobSpec& spec,
                         const core::TrainResult& result);
absl::StatusOr<core::Model> FromProto(const v1::TrainedModel& model);

}  // namespace sparrow::spec

#endif  // SPARROW_SERVER_SPEC_CONVERT_H_
