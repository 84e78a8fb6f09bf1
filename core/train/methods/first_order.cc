// SGD and Adam (core/optim/first_order) on the model's objective.
#include "core/optim/first_order/first_order.h"

#include "core/train/methods.h"

namespace sparrow::core {
namespace {

absl::StatusOr<MethodResult> Run(FirstOrderOptions o, const TrainConfig& config,
                                 TrainSetup* setup, Eigen::VectorXd* w,
                                 IterationCallback* callback,
                                 const char* name) {
  o.seed = config.seed;
  if (o.initial_state.size() > 0) {
    // UnpackState keeps the fresh moments when the state does not fit; a
    // run from them would not continue the checkpoint, so a misfit is an
    // error.
    FirstOrderOptimizer probe(o);
    probe.Initialize(setup->objective->num_params());
    if (!probe.UnpackState(o.initial_state)) {
      return ResumeStateError(name, o.initial_state.size());
    }
  }
  MethodResult result;
  result.summary = MinimizeFirstOrder(o, *setup->objective, w, callback);
  return result;
}

}  // namespace

absl::Status CheckMethod(const SgdOptions& options, const TrainConfig&) {
  return OptionsStatus(options.Validate(), "sgd");
}
absl::Status CheckMethod(const AdamOptions& options, const TrainConfig&) {
  return OptionsStatus(options.Validate(), "adam");
}

absl::StatusOr<MethodResult> RunMethod(const SgdOptions& options,
                                       const TrainConfig& config,
                                       TrainSetup* setup, Eigen::VectorXd* w,
                                       IterationCallback* callback, Model*) {
  return Run(options, config, setup, w, callback, "sgd");
}
absl::StatusOr<MethodResult> RunMethod(const AdamOptions& options,
                                       const TrainConfig& config,
                                       TrainSetup* setup, Eigen::VectorXd* w,
                                       IterationCallback* callback, Model*) {
  return Run(options, config, setup, w, callback, "adam");
}

// The moments and step count continue where the checkpoint left them.
void ResumeMethod(const ResumePoint& point, const TrainConfig&,
                  SgdOptions* options) {
  options->initial_state = point.state;
}
void ResumeMethod(const ResumePoint& point, const TrainConfig&,
                  AdamOptions* options) {
  options->initial_state = point.state;
}

}  // namespace sparrow::core
