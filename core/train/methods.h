// What the trainer does per method: one overload of each function below per
// alternative of OptimizerOptions, defined in core/train/methods/<method>.cc
// next to nothing else. Train, TrainConfig::Validate and the server's resume
// reach them through std::visit, so adding a method means adding its
// overloads here and its file, with no switch to extend elsewhere.
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

// The outcome of a method's run.
struct MethodResult {
  Summary summary;
  // The method returned its own best iterate (SBDL's best outer iteration,
  // with the matching mask); the trainer must not replace it by the best one
  // on validation data.
  bool returns_best = false;
};

// For each Options type of OptimizerOptions:
//  - CheckMethod: the options are valid and the method can train the config's
//    model and loss; messages name the spec path (optimizer.<name>.<field>).
//  - RunMethod: runs the method from *w on the setup; *w ends at the result.
//    May set the model's method-specific fields (SBDL's mask, variances).
//  - ResumeMethod: makes a resumed run continue from a checkpoint's step size
//    and internal state.
#define SPARROW_DECLARE_METHOD(Options)                                        \
  absl::Status CheckMethod(const Options& options, const TrainConfig& config); \
  absl::StatusOr<MethodResult> RunMethod(                                      \
      const Options& options, const TrainConfig& config, TrainSetup* setup,    \
      Eigen::VectorXd* w, IterationCallback* callback, Model* model);          \
  void ResumeMethod(const ResumePoint& point, const TrainConfig& config,       \
                    Options* options);

SPARROW_DECLARE_METHOD(SgdOptions)
SPARROW_DECLARE_METHOD(AdamOptions)
SPARROW_DECLARE_METHOD(LbfgsOptions)
SPARROW_DECLARE_METHOD(NailsOptions)
SPARROW_DECLARE_METHOD(NailmOptions)
SPARROW_DECLARE_METHOD(SbdlOptions)
SPARROW_DECLARE_METHOD(B2ldOptions)
SPARROW_DECLARE_METHOD(BlingOptions)

#undef SPARROW_DECLARE_METHOD

// `status` (an Options::Validate result) with its message prefixed by the
// spec path "optimizer.<name>.".
absl::Status OptionsStatus(const absl::Status& status, const char* name);

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
int* IterationBudget(TrainConfig* config);
int IterationBudget(const TrainConfig& config);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_METHODS_H_
