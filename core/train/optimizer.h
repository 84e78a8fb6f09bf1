// The optimizer a training run uses: one alternative per method, each holding
// the method's own Options (its stopping rules in `stop`, its spec name in
// kName). Everything the trainer, the server and the CLI do per method goes
// through std::visit over this variant and the overloads declared below, each
// method's defined in core/train/methods/<method>.cc. A new method is one
// alternative and one SPARROW_DECLARE_METHOD line here, plus its own files.
#ifndef SPARROW_CORE_TRAIN_OPTIMIZER_H_
#define SPARROW_CORE_TRAIN_OPTIMIZER_H_

#include <limits>
#include <variant>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/optim/bld/bld.h"
#include "core/optim/first_order/first_order.h"
#include "core/optim/gauss_newton/gauss_newton.h"
#include "core/optim/lbfgs/lbfgs.h"
#include "core/optim/problem.h"
#include "core/optim/rls/rls.h"
#include "core/optim/sbdl/sbdl.h"
#include "core/optim/stop_rules.h"

namespace sparrow::core {

struct Model;
struct TrainConfig;
struct TrainSetup;

using OptimizerOptions = std::variant<SgdOptions, AdamOptions, LbfgsOptions,
                                      NailsOptions, NailmOptions, SbdlOptions,
                                      B2ldOptions, BlingOptions, RlsOptions>;

// The method's name in specs and messages: "sgd", "adam", ..., "bling".
const char* OptimizerName(const OptimizerOptions& options);

// The method's stopping rules. Its iteration budget, stop.max_iterations,
// counts what its progress records count (epochs, sweeps, SBDL's outer
// iterations).
StopRules& Stop(OptimizerOptions& options);
const StopRules& Stop(const OptimizerOptions& options);

// SGD, Adam or L-BFGS: methods that need only an Objective's values and
// gradients (any model kind, any objective).
bool IsFirstOrder(const OptimizerOptions& options);

// RLS: trains layered networks (mlp, cnn, rnn, lstm) on minibatches through
// the threaded NetworkObjective, like the first-order methods.
bool IsRls(const OptimizerOptions& options);

// NAILS or NAILM: the Gauss-Newton methods (ADMM runs around them; their
// normal equations dominate a job's memory).
bool UsesGaussNewton(const OptimizerOptions& options);

// Where a resumed run continues: a checkpoint of an IterationRecord. The
// iterations and optimizer seconds done, the iterate, the last step size
// (learning rate, damping, ...; NaN when none), the method's internal state
// (IterationRecord::optimizer_state; empty when none) and the trainer's best
// iterate on validation data (empty when none) with its metric and the
// reports since, and the stall test's state (StopRules).
struct ResumePoint {
  int iteration = 0;
  double elapsed_seconds = 0.0;
  Eigen::VectorXd params;
  double step_size = std::numeric_limits<double>::quiet_NaN();
  Eigen::VectorXd state;
  Eigen::VectorXd best_params;
  double best_validation_metric = std::numeric_limits<double>::infinity();
  int reports_since_best = 0;
  // The stall test's reference (NaN = none) and the iterations since.
  double stall_reference = std::numeric_limits<double>::quiet_NaN();
  int stall_since = 0;
  double loss = std::numeric_limits<double>::quiet_NaN();  // reported
  // A multi-stage run: the stage, and the iteration and seconds (of the
  // whole run) at which it started.
  int stage = 0;
  int stage_start_iteration = 0;
  double stage_start_seconds = 0.0;
};

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
SPARROW_DECLARE_METHOD(RlsOptions)

#undef SPARROW_DECLARE_METHOD

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_OPTIMIZER_H_
