// SBDL (core/optim/sbdl) on an mlp or narx_mlp model's objective.
#include "core/optim/sbdl/sbdl.h"

#include "absl/strings/str_cat.h"
#include "core/models/layers/dense.h"
#include "core/optim/sbdl/state.h"
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
  auto& objective = static_cast<SbdlObjective&>(*setup->objective);
  // MinimizeSbdl starts afresh from a state that does not fit; that run would
  // not continue the checkpoint's.
  if (!SbdlStateFits(o, layers, objective.num_params(), setup->mlp.linear())) {
    return ResumeStateError("sbdl", o.resume.state.size());
  }
  SbdlResult r;
  MethodResult result;
  result.summary =
      MinimizeSbdl(o, layers, objective, w, &r, callback, setup->mlp.linear());
  // SBDL returns its best outer iterate itself, with the matching mask.
  result.returns_best = true;
  model->mask = r.mask;
  model->variance = r.variance;
  model->noise_variance = r.noise_variance;
  return result;
}

// SBDL goes on with the checkpoint's hyperparameters, mask, kept iterate and
// inner state; the trainer's validation tracking says whether the
// checkpoint's iterate was the best so far.
void ResumeMethod(const ResumePoint& point, const TrainConfig&,
                  SbdlOptions* options) {
  options->resume.state = point.state;
  options->resume.has_metric = point.best_params.size() > 0;
  options->resume.improved =
      options->resume.has_metric && point.reports_since_best == 0;
  options->resume.best_metric = point.best_validation_metric;
}

}  // namespace sparrow::core
