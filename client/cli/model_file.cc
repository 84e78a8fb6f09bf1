#include "client/cli/model_file.h"

#include <optional>
#include <utility>

#include "client/cli/common.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "translate/json.h"
#include "translate/warm_start.h"

namespace sparrow::cli {

absl::StatusOr<v1::TrainedModel> ReadModel(const std::string& path) {
  SPARROW_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path, "the model"));
  v1::TrainedModel model;
  if (translate::HasJsonSuffix(path)) {
    google::protobuf::util::JsonParseOptions options;
    const auto s =
        google::protobuf::util::JsonStringToMessage(bytes, &model, options);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          "the model file " + path +
          " is not a sparrow.v1.TrainedModel in JSON: " +
          std::string(s.message()));
    }
  } else if (!model.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        "the model file " + path +
        " is not a binary sparrow.v1.TrainedModel (use a .json name for JSON)");
  }
  return model;
}

absl::Status SetLocalWarmStart(const v1::JobSpec& spec,
                               core::TrainConfig* config) {
  std::optional<v1::TrainedModel> file;
  if (spec.warm_start().has_model_path()) {
    SPARROW_ASSIGN_OR_RETURN(file, ReadModel(spec.warm_start().model_path()));
  }
  SPARROW_ASSIGN_OR_RETURN(
      std::optional<v1::TrainedModel> model,
      translate::WarmStartModel(spec, file ? &*file : nullptr));
  if (!model.has_value()) return absl::OkStatus();
  return translate::ApplyWarmStart(spec, *model, 0, config);
}

absl::Status InlineWarmStart(v1::JobSpec* spec) {
  if (!spec->warm_start().has_model_path()) return absl::OkStatus();
  SPARROW_ASSIGN_OR_RETURN(v1::TrainedModel model,
                           ReadModel(spec->warm_start().model_path()));
  spec->mutable_warm_start()->set_model(model.SerializeAsString());
  return absl::OkStatus();
}

}  // namespace sparrow::cli
