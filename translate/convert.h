// The one place where protobuf meets core: JobSpec JSON parsing and validation,
// JobSpec -> core::TrainConfig, CSV bytes + JobSpec -> core::TrainData, and
// core results -> sparrow.v1.TrainedModel (and back, to run a stored model).
#ifndef SPARROW_TRANSLATE_CONVERT_H_
#define SPARROW_TRANSLATE_CONVERT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/train/trainer.h"
#include "sparrow/v1/model.pb.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::translate {

// Parses a JobSpec from JSON (protobuf JSON mapping). Unknown fields are
// errors.
absl::StatusOr<v1::JobSpec> ParseJobSpecJson(absl::string_view json);
std::string ToJson(const google::protobuf::Message& message);

// Refuses fields of `message` (and of the messages in it) that this build
// does not know: protobuf keeps them and otherwise ignores them, so a spec
// with an option from a newer client would silently train something else.
// INVALID_ARGUMENT names the field's path under `path` and its number.
absl::Status RejectUnknownFields(const google::protobuf::Message& message,
                                 const std::string& path);

// Translates and validates the model / loss / optimizer / stopping parts.
// Errors name the field (e.g. "model.state_space_rnn.fx_hidden[0] is -4; layer
// sizes must be positive").
absl::StatusOr<core::TrainConfig> ToTrainConfig(const v1::JobSpec& spec);

// What LoadTrainData made of the file, for the caller to report.
struct DataSummary {
  int64_t file_rows = 0;     // data rows of the CSV
  int64_t dropped_rows = 0;  // rows with a missing value (data.drop_missing)
  // Samples per split (mlp: rows; sequence models: samples of all traces).
  int64_t train_rows = 0, validation_rows = 0, test_rows = 0;
  // Model inputs and outputs, after one-hot encoding data.categorical.
  int inputs = 0, outputs = 0;
};

// Parses the CSV bytes of the spec's data source, one-hot encodes the
// categorical columns, drops the rows with missing values (data.drop_missing)
// and cuts the splits (row ranges or a random split). Fills `summary` when
// given.
absl::StatusOr<core::TrainData> LoadTrainData(const v1::JobSpec& spec,
                                              const core::TrainConfig& config,
                                              absl::string_view csv,
                                              DataSummary* summary = nullptr);

// The checks of LoadTrainData that need only the file's header and number of
// data rows (column roles, categorical columns, split ranges and fractions),
// for a service to refuse a spec at submission rather than fail the job when
// it starts. rows <= 0 skips the row ranges. Trace lengths (NARX lags), the
// levels of categorical columns, missing values and the sizes of a random
// split are still checked by LoadTrainData only.
absl::Status ValidateDataSpec(const v1::JobSpec& spec,
                              const std::vector<std::string>& header,
                              int64_t rows);

v1::TrainedModel ToProto(const v1::JobSpec& spec,
                         const core::TrainResult& result);
absl::StatusOr<core::Model> FromProto(const v1::TrainedModel& model);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_CONVERT_H_
