// B2LD and BLInG (core/optim/bld) on an mlp model: they minimize their own
// layered least-squares objective, which replaces the setup's.
#include "core/optim/bld/bld.h"

#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/train/methods.h"

namespace sparrow::core {
namespace {

// Their objective has its own weight decay (optimizer.*.rho) and their own
// stopping tests: settings they would silently ignore are refused.
template <typename Options>
absl::Status Check(const Options& options, const TrainConfig& config,
                   const char* name, const char* tolerance_hint) {
  if (!config.model.is<MlpKind>() || config.loss.kind != LossKind::kMse) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer.", name,
                     " trains mlp models with loss LOSS_MSE (Palagi & Seccia's "
                     "least-squares networks)"));
  }
  if (config.rho_theta != 0.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "regularization.rho_theta is not used by optimizer.", name,
        "; set optimizer.", name, ".rho (the weight decay of its objective)"));
  }
  if (options.stop.tolerance != 0.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stopping.tolerance is not used by optimizer.", name, tolerance_hint));
  }
  return OptionsStatus(options.Validate(), name);
}

LayeredObjective* MakeLayered(double rho, TrainSetup* setup) {
  auto layered = std::make_unique<LayeredObjective>(
      &setup->mlp.network(), &setup->train_table.x, &setup->train_table.y,
      BldRho(rho, setup->mlp.num_params()));
  LayeredObjective* f = layered.get();
  setup->objective = std::move(layered);  // the reported objective is f
  return f;
}

// Runs `minimize` (MinimizeB2ld or MinimizeBling) on the layered objective.
template <typename Options, typename Minimize>
MethodResult RunLayered(const Options& options, const TrainConfig& config,
                        TrainSetup* setup, Eigen::VectorXd* w,
                        IterationCallback* callback, Minimize minimize) {
  LayeredObjective* f = MakeLayered(options.rho, setup);
  Options o = options;
  o.seed = config.seed;
  MethodResult result;
  result.summary = minimize(o, *f, w, callback);
  return result;
}

// The step size a checkpoint reports is the block tolerance (B2LD) or the
// step (BLInG) reached so far; a run resumes with it.
bool UsableStep(const ResumePoint& point) {
  return std::isfinite(point.step_size) && point.step_size > 0;
}

}  // namespace

absl::Status CheckMethod(const B2ldOptions& options,
                         const TrainConfig& config) {
  return Check(options, config, "b2ld",
               "; use optimizer.b2ld.relative_decrease and gradient_tolerance");
}
absl::Status CheckMethod(const BlingOptions& options,
                         const TrainConfig& config) {
  return Check(options, config, "bling",
               "; BLInG stops on max_epochs or max_seconds");
}

absl::StatusOr<MethodResult> RunMethod(const B2ldOptions& options,
                                       const TrainConfig& config,
                                       TrainSetup* setup, Eigen::VectorXd* w,
                                       IterationCallback* callback, Model*) {
  return RunLayered(options, config, setup, w, callback,
                    [](const B2ldOptions& o, LayeredObjective& f,
                       Eigen::VectorXd* w, IterationCallback* callback) {
                      return MinimizeB2ld(o, f, w, callback);
                    });
}
absl::StatusOr<MethodResult> RunMethod(const BlingOptions& options,
                                       const TrainConfig& config,
                                       TrainSetup* setup, Eigen::VectorXd* w,
                                       IterationCallback* callback, Model*) {
  return RunLayered(options, config, setup, w, callback, MinimizeBling);
}

// The tolerance (B2LD) or step (BLInG) goes on from the checkpoint's, and the
// random orders from its sweep or epoch.
void ResumeMethod(const ResumePoint& point, const TrainConfig&,
                  B2ldOptions* options) {
  if (UsableStep(point)) options->epsilon0 = point.step_size;
  options->iterations_before = point.iteration;
}
void ResumeMethod(const ResumePoint& point, const TrainConfig&,
                  BlingOptions* options) {
  if (UsableStep(point)) options->alpha0 = point.step_size;
  options->iterations_before = point.iteration;
}

}  // namespace sparrow::core
