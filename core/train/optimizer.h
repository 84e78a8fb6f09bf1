// The optimizer a training run uses: one alternative per method, each holding
// the method's own Options (with its stopping rules in `stop`). Everything the
// trainer, the server and the CLI do per method goes through std::visit over
// this variant and the overload sets declared in core/train/methods.h, so a
// new method is one alternative here plus its own files.
#ifndef SPARROW_CORE_TRAIN_OPTIMIZER_H_
#define SPARROW_CORE_TRAIN_OPTIMIZER_H_

#include <variant>

#include "Eigen/Core"
#include "core/optim/bld/bld.h"
#include "core/optim/first_order/first_order.h"
#include "core/optim/gauss_newton/gauss_newton.h"
#include "core/optim/lbfgs/lbfgs.h"
#include "core/optim/sbdl/sbdl.h"
#include "core/optim/stop_rules.h"

namespace sparrow::core {

using OptimizerOptions =
    std::variant<SgdOptions, AdamOptions, LbfgsOptions, NailsOptions,
                 NailmOptions, SbdlOptions, B2ldOptions, BlingOptions>;

// The method's name in specs and messages: "sgd", "adam", ..., "bling".
const char* OptimizerName(const OptimizerOptions& options);

// The method's stopping rules. Its iteration budget, stop.max_iterations,
// counts what its progress records count (epochs, sweeps, SBDL's outer
// iterations).
StopRules& Stop(OptimizerOptions& options);
const StopRules& Stop(const OptimizerOptions& options);

// Where a resumed run continues: the last checkpoint's step size (learning
// rate, damping, ...; NaN when none) and the method's internal state
// (IterationRecord::optimizer_state; empty when none).
struct ResumePoint {
  double step_size = 0.0;
  Eigen::VectorXd state;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_OPTIMIZER_H_
