// Full-batch L-BFGS (core/optim/lbfgs) on the model's objective.
#include "core/optim/lbfgs/lbfgs.h"

#include "core/optim/lbfgs/state.h"
#include "core/train/methods.h"

namespace sparrow::core {

absl::Status CheckMethod(const LbfgsOptions& options, const TrainConfig&) {
  return OptionsStatus(options.Validate(), "lbfgs");
}

absl::StatusOr<MethodResult> RunMethod(const LbfgsOptions& options,
                                       const TrainConfig&, TrainSetup* setup,
                                       Eigen::VectorXd* w,
                                       IterationCallback* callback, Model*) {
  // MinimizeLbfgs starts without memory from a state that does not fit; that
  // run would not continue the checkpoint's.
  if (!LbfgsStateFits(options.initial_state, setup->objective->num_params(),
                      options.memory)) {
    return ResumeStateError("lbfgs", options.initial_state.size());
  }
  MethodResult result;
  result.summary = MinimizeLbfgs(options, *setup->objective, w, callback);
  return result;
}

// L-BFGS goes on with the checkpoint's correction pairs.
void ResumeMethod(const ResumePoint& point, const TrainConfig&,
                  LbfgsOptions* options) {
  options->initial_state = point.state;
}

}  // namespace sparrow::core
