// SBDL (core/optim/sbdl) on an mlp or narx_mlp model's objective.
#include "core/optim/sbdl/sbdl.h"

#include "absl/strings/str_cat.h"
#include "core/models/layers/dense.h"
#include "core/train/methods.h"

namespace sparrow::core {

absl::Status CheckMethod(const SbdlOptions& options,
                         const TrainConfig& config) {
  if (config.model.is<StateSpaceRnnKind>()) {
    return absl::InvalidArgumentError(
        "optimizer.sbdl trains narx_mlp and mlp models; use nails or nailm "
        "for state_space_rnn");
  }
  if (config.loss.kind != LossKind::kMse) {
    return absl::InvalidArgumentError(
        "optimizer.sbdl needs loss LOSS_MSE (its likelihood is Gaussian)");
  }
  return OptionsStatus(
      options.Validate(static_cast<int>(config.model.hidden.size()) + 1),
      "sbdl");
}

absl::StatusOr<MethodResult> RunMethod(const SbdlOptions& options,
                                       const TrainConfig& config,
                                       TrainSetup* setup, Eigen::VectorXd* w,
                                       IterationCallback* callback,
                                       Model* model) {
  const std::vector<DenseBlock> layers = DenseBlocks(setup->mlp.network());
  SbdlOptions o = options;
  o.seed = config.seed;
  SbdlResult r;
  MethodResult result;
  result.summary =
      MinimizeSbdl(o, layers, static_cast<SbdlObjective&>(*setup->objective), w,
                   &r, callback);
  // SBDL returns its best outer iterate itself, with the matching mask.
  result.returns_best = true;
  model->mask = r.mask;
  model->variance = r.variance;
  model->noise_variance = r.noise_variance;
  return result;
}

// SBDL's hyperparameters and inner state start afresh from the checkpoint's
// weights.
void ResumeMethod(const ResumePoint&, const TrainConfig&, SbdlOptions*) {}

}  // namespace sparrow::core
