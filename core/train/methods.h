// The dispatch over the optimizer alternatives (core/train/optimizer.h): the
// config's method's CheckMethod / RunMethod / ResumeMethod through std::visit,
// its iteration budget, and the spec-path prefix of its messages.
#ifndef SPARROW_CORE_TRAIN_METHODS_H_
#define SPARROW_CORE_TRAIN_METHODS_H_

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/optim/problem.h"
#include "core/train/optimizer.h"
#include "core/train/setup.h"
#include "core/train/trainer.h"

namespace sparrow::core {

// `status` (an Options::Validate result) with its message prefixed by the
// spec path "optimizer.<name>.".
absl::Status OptionsStatus(const absl::Status& status, const char* name);

// DATA_LOSS: a checkpoint's optimizer state of `values` numbers does not fit
// optimizer.<name> on this model, so the run cannot continue it.
absl::Status ResumeStateError(const char* name, Eigen::Index values);

// Runs CheckMethod, RunMethod or ResumeMethod of the config's method.
absl::Status CheckMethod(const TrainConfig& config);
absl::StatusOr<MethodResult> RunMethod(const TrainConfig& config,
                                       TrainSetup* setup, Eigen::VectorXd* w,
                                       IterationCallback* callback,
                                       Model* model);
void ResumeMethod(const ResumePoint& point, TrainConfig* config);

// The iterations a run makes at most, as its progress records count them: the
// method's stop.max_iterations, or ADMM's when a non-smooth penalty is set.
// The server shortens it when a job resumes; the CLI shows progress against
// it.
// A multi-stage run: the const overload gives the sum over its stages, the
// mutable one its first stage's.
int* IterationBudget(TrainConfig* config);
int IterationBudget(const TrainConfig& config);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_METHODS_H_
