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
absl::Status Check(const StopRules& stop, const TrainConfig& config,
                   const char* name, const char* tolerance_hint) {
  if (config.model.kind != ModelKind::kMlp ||
      config.loss.kind != LossKind::kMse) {
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
  if (stop.tolerance != 0.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stopping.tolerance is not used by optimizer.", name, tolerance_hint));
  }
  return absl::OkStatus();
}

LayeredObjective* MakeLayered(double rho, TrainSetup* setup) {
  auto layered = std::make_unique<LayeredObjective>(
      &setup->mlp.network(), &setup->train_table.x, &setup->train_table.y,
      BldRho(rho, setup->mlp.num_params()));
  LayeredObjective* f = layered.get();
  setup->objective = std::move(layered);  // the reported objective is f
  return f;
}

// The step size a checkpoint reports is the block tolerance (B2LD) or the
// step (BLInG) reached so far; a run resumes with it.
bool UsableStep(const ResumePoint& point) {
  return std::isfinite(point.step_size) && point.step_size > 0;
}

}  // namespace

absl::Status CheckMethod(const B2ldOptions& options,
                         const TrainConfig& config) {
  const absl::Status s =
      Check(options.stop, config, "b2ld",
            "; use optimizer.b2ld.relative_decrease and gradient_tolerance");
  if (!s.ok()) return s;
  return OptionsStatus(options.Validate(), "b2ld");
}
absl::Status CheckMethod(const BlingOptions& options,
                         const TrainConfig& config) {
  const absl::Status s = Check(options.stop, config, "bling",
                               "; BLInG stops on max_epochs or max_seconds");
  if (!s.ok()) return s;
  return OptionsStatus(options.Validate(), "bling");
}

absl::StatusOr<MethodResult> RunMethod(const B2ldOptions& options,
                                       const TrainConfig& config,
                                       TrainSetup* setup, Eigen::VectorXd* w,
                                       IterationCallback* callback, Model*) {
  LayeredObjective* f = MakeLayered(options.rho, setup);
  B2ldOptions o = options;
  o.seed = config.seed;
  MethodResult result;
  result.summary = MinimizeB2ld(o, *f, w, callback);
  return result;
}
absl::StatusOr<MethodResult> RunMethod(const BlingOptions& options,
                                       const TrainConfig& config,
                                       TrainSetup* setup, Eigen::VectorXd* w,
                                       IterationCallback* callback, Model*) {
  LayeredObjective* f = MakeLayered(options.rho, setup);
  BlingOptions o = options;
  o.seed = config.seed;
  MethodResult result;
  result.summary = MinimizeBling(o, *f, w, callback);
  return result;
}

void ResumeMethod(const ResumePoint& point, const TrainConfig&,
                  B2ldOptions* options) {
  if (UsableStep(point)) options->epsilon0 = point.step_size;
}
void ResumeMethod(const ResumePoint& point, const TrainConfig&,
                  BlingOptions* options) {
  if (UsableStep(point)) options->alpha0 = point.step_size;
}

}  // namespace sparrow::core
