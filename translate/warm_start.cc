#include "translate/warm_start.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "translate/model.h"

namespace sparrow::translate {
namespace {

v1::LossKind KindOf(const v1::LossSpec& loss) {
  return loss.kind() == v1::LOSS_UNSPECIFIED ? v1::LOSS_MSE : loss.kind();
}

}  // namespace

absl::StatusOr<std::optional<v1::TrainedModel>> WarmStartModel(
    const v1::JobSpec& spec, const v1::TrainedModel* resolved) {
  if (!spec.has_warm_start()) return std::nullopt;
  const v1::WarmStart& w = spec.warm_start();
  switch (w.source_case()) {
    case v1::WarmStart::kModel: {
      v1::TrainedModel model;
      if (!model.ParseFromString(w.model())) {
        return absl::InvalidArgumentError(
            "warm_start.model is not a binary sparrow.v1.TrainedModel");
      }
      return model;
    }
    case v1::WarmStart::kJobId:
      if (resolved != nullptr) return *resolved;
      return absl::InvalidArgumentError(
          "warm_start.job_id names a job on sparrowd; for a local run, "
          "download its model (sparrow model get JOB -o model.json) and set "
          "warm_start.model_path");
    case v1::WarmStart::kModelPath:
      if (resolved != nullptr) return *resolved;
      return absl::InvalidArgumentError(
          "warm_start.model_path is a file on the client's machine, which "
          "sparrowd cannot read; submit with `sparrow submit` (it sends the "
          "file's model inline), or use warm_start.job_id");
    case v1::WarmStart::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "warm_start needs one of job_id, model_path or model");
}

absl::Status ApplyWarmStart(const v1::JobSpec& spec,
                            const v1::TrainedModel& model, int n_inputs,
                            core::TrainConfig* config) {
  if (model.model().kind_case() != spec.model().kind_case()) {
    return absl::InvalidArgumentError(
        "warm_start: the model is of another kind than this spec's model; "
        "start from a model of the same kind");
  }
  if (KindOf(model.loss()) != KindOf(spec.loss())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "warm_start: the model was trained with loss ",
        v1::LossKind_Name(KindOf(model.loss())), " but this spec uses ",
        v1::LossKind_Name(KindOf(spec.loss())), "; use the same loss"));
  }
  if (n_inputs > 0 && model.num_inputs() != n_inputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("warm_start: the model has ", model.num_inputs(),
                     " input columns but this job has ", n_inputs,
                     "; use the same data columns"));
  }
  absl::StatusOr<core::Model> start = FromProto(model);
  if (!start.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("warm_start: ", start.status().message()));
  }
  config->warm_start = std::make_shared<const core::Model>(*std::move(start));
  return absl::OkStatus();
}

}  // namespace sparrow::translate
